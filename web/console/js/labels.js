// Words for the anti-abuse API's enum names and figures (protos/tavla/antiabuse/v1/).
// The gateway's JSON names enums as in the proto (ALERT_KIND_CHIP_DUMPING, ...).

import { h } from "./dom.js";

export const ALERT_KINDS = {
  ALERT_KIND_MULTI_ACCOUNTING: "Multi-accounting",
  ALERT_KIND_COLLUSION: "Collusion or consulting",
  ALERT_KIND_CHIP_DUMPING: "Chip dumping",
  ALERT_KIND_BOT_SUSPECTED: "Assistance or bot",
  ALERT_KIND_DELIBERATE_DISCONNECT: "Deliberate disconnects",
  ALERT_KIND_CHAT_ABUSE: "Chat abuse",
  ALERT_KIND_RATING_MANIPULATION: "Rating manipulation",
};

export const SEVERITIES = {
  SEVERITY_LOW: "Low",
  SEVERITY_MEDIUM: "Medium",
  SEVERITY_HIGH: "High",
  SEVERITY_CRITICAL: "Critical",
};

export const ALERT_STATUSES = {
  ALERT_STATUS_OPEN: "Open",
  ALERT_STATUS_DISMISSED: "Dismissed",
  ALERT_STATUS_CONFIRMED: "Confirmed",
};

export const CASE_STATUSES = {
  CASE_STATUS_OPEN: "Open",
  CASE_STATUS_CLEARED: "Cleared",
  CASE_STATUS_SANCTIONED: "Sanctioned",
};

// The sanctions a case may impose on one account, with what each does (events.proto).
export const ACCOUNT_SANCTIONS = {
  SANCTION_KIND_FREEZE_WALLET: ["Freeze wallet", "no play, no deposits, no withdrawals"],
  SANCTION_KIND_SUSPEND_ACCOUNT: ["Suspend account", "no sign-in, sessions ended"],
  SANCTION_KIND_TERMINATE_ACCOUNT: [
    "Terminate account", "closed for good, the person may not register again; wallet frozen",
  ],
};
export const FORBID_PAIR = "SANCTION_KIND_FORBID_PAIR";
export const SANCTIONS = {
  ...Object.fromEntries(Object.entries(ACCOUNT_SANCTIONS).map(([k, [label]]) => [k, label])),
  [FORBID_PAIR]: "Forbid pair",
};

// What a case log's actions say (CaseEntry.action).
export const LOG_ACTIONS = {
  opened: "Opened",
  assigned: "Assigned",
  note: "Note",
  sanction: "Sanction",
  proposed: "Proposed (awaits a second officer)",
  approved: "Approved",
  rejected: "Rejected",
  resolved: "Resolved",
};

// An alert's history: raised, then updated by new evidence (same detector and accounts).
export const HISTORY_ACTIONS = {
  raised: "Raised",
  updated: "New evidence",
  escalated: "New evidence, higher severity",
};

export function label(table, name) {
  return table[name] || String(name || "").replace(/^[A-Z]+_[A-Z]+_/, "").toLowerCase() || "-";
}

/** "shared_device" -> "Shared device". */
export function words(name) {
  const text = String(name || "").replaceAll("_", " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** A severity as a badge: its word is the meaning, the colour only repeats it. */
export function severityBadge(severity) {
  const name = String(severity || "").replace("SEVERITY_", "").toLowerCase();
  return h("span", { class: `badge severity-${name}` }, label(SEVERITIES, severity));
}

export function statusBadge(table, status) {
  const name = String(status || "").replace(/^.*_STATUS_/, "").toLowerCase();
  return h("span", { class: `badge status-${name}` }, label(table, status));
}

const DATE = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric",
  hour: "2-digit", minute: "2-digit", second: "2-digit",
});

/** An RFC 3339 time (the gateway's Timestamp) as a <time> element, or "-". */
export function when(stamp) {
  if (!stamp) return "-";
  const at = new Date(stamp);
  if (Number.isNaN(at.getTime())) return String(stamp);
  return h("time", { datetime: at.toISOString() }, DATE.format(at));
}

/** An actor of a case or alert: "you", the automatic policy, or an account id. */
export function actor(id, me) {
  if (!id) return "-";
  if (id === "policy") return "automatic policy";
  return id === me ? `you (${id})` : id;
}
