// The compliance team's calls (AntiAbuseService, protos/tavla/antiabuse/v1/), over the
// player client's REST client and its token handling (web/js/api.js: the access token
// in memory, the refresh token for this tab, refreshes, logout): this module is the
// console's only door to the API.

import { api } from "../../js/api.js";

const COMPLIANCE = "compliance";

function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

const path = encodeURIComponent;

// ----------------------------------------------------------------------- session

/** The claims of the access token api.js holds (it verifies nothing: the services do). */
function claims() {
  const token = api.accessToken;
  if (!token) return null;
  try {
    const part = token.split(".")[1].replaceAll("-", "+").replaceAll("_", "/");
    const padded = part + "=".repeat((4 - (part.length % 4)) % 4);
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(padded), (c) => c.charCodeAt(0))));
  } catch {
    return null;
  }
}

/**
 * The signed-in account, {accountId, roles}, or null. After a reload the tab's refresh
 * token is spent for a new access token first (api.js keeps the access token in memory).
 */
export async function officer() {
  if (!api.accessToken && !(await api.restore())) return null;
  const found = claims();
  if (!found) return null;
  return { accountId: found.sub, roles: Array.isArray(found.roles) ? found.roles : [] };
}

/**
 * Whether the token carries the compliance role. Only a courtesy: the service refuses
 * every compliance call without it (PERMISSION_DENIED), whatever the page believes.
 */
export function isOfficer(who) {
  return Boolean(who && who.roles.includes(COMPLIANCE));
}

export const signIn = (email, password) => api.login(email, password);
export const signOut = () => api.logout();
export const onSignedOut = (listener) => api.onSignedOut(listener);

// ------------------------------------------------------------------------ alerts

/** Alerts, newest first: {alerts, nextPageToken}. */
export function listAlerts({ accountId, kind, minSeverity, status, pageToken, pageSize } = {}) {
  return api.get(`/v1/compliance/alerts${query({
    accountId, kind, minSeverity, status, pageToken, pageSize,
  })}`);
}

export const getAlert = (alertId) => api.get(`/v1/compliance/alerts/${path(alertId)}`);

/** status: ALERT_STATUS_DISMISSED or ALERT_STATUS_CONFIRMED. */
export const resolveAlert = (alertId, status, note) =>
  api.post(`/v1/compliance/alerts/${path(alertId)}:resolve`, { status, note });

export const riskProfile = (accountId) =>
  api.get(`/v1/compliance/accounts/${path(accountId)}/risk`);

// ------------------------------------------------------------------------- cases

/** Cases, newest first, without their logs: {cases, nextPageToken}. */
export function listCases({ status, accountId, alertId, assigneeAccountId, pageToken, pageSize } = {}) {
  return api.get(`/v1/compliance/cases${query({
    status, accountId, alertId, assigneeAccountId, pageToken, pageSize,
  })}`);
}

export const getCase = (caseId) => api.get(`/v1/compliance/cases/${path(caseId)}`);

export const openCase = (alertIds, note) =>
  api.post("/v1/compliance/cases", { alertIds, note });

/** assignee: an officer's account id, or "" to unassign. */
export const assignCase = (caseId, assigneeAccountId) =>
  api.post(`/v1/compliance/cases/${path(caseId)}:assign`, { assigneeAccountId });

export const noteCase = (caseId, note) =>
  api.post(`/v1/compliance/cases/${path(caseId)}:note`, { note });

/**
 * outcome: CASE_STATUS_CLEARED (no sanctions) or CASE_STATUS_SANCTIONED;
 * sanctions: [{kind, accountId, otherAccountId?}].
 */
export const resolveCase = (caseId, outcome, note, sanctions) =>
  api.post(`/v1/compliance/cases/${path(caseId)}:resolve`, { outcome, note, sanctions });

/** A second officer approves the sanctions another proposed (suspend, terminate). */
export const approveSanctions = (caseId, note) =>
  api.post(`/v1/compliance/cases/${path(caseId)}:approve`, { note });

/** The sanctions awaiting approval are turned down (a note says why). */
export const rejectSanctions = (caseId, note) =>
  api.post(`/v1/compliance/cases/${path(caseId)}:reject`, { note });
