// One alert: what was found, its evidence, its history (raised, then each update by new
// evidence), the alert it follows (re-armed after a resolution), the accounts it names
// (each a link to the account's risk profile), the case it is in; or, for an open alert in no case, a case
// opened from it or the alert resolved on its own (dismissed or confirmed, with a note).

import { names } from "../../../js/names.js";
import * as client from "../client.js";
import { details, field, h, replace, short, submitting } from "../dom.js";
import {
  ALERT_KINDS, ALERT_STATUSES, CASE_STATUSES, HISTORY_ACTIONS, actor, label, severityBadge,
  statusBadge, when, words,
} from "../labels.js";

/** The account's id (a link to its risk profile) with its screen name beside it, filled in
 * when the batched lookup answers (names.js; as text, never HTML). */
export function accountLink(accountId) {
  return h("span", { class: "account" },
    h("a", { href: `#/accounts/${encodeURIComponent(accountId)}`, class: "id" }, accountId), " ",
    screenName(accountId));
}

/** The account's id with its screen name beside it, as text (no link: inside a sentence or
 * a form's legend). */
export function accountNamed(accountId) {
  return h("span", { class: "account" }, h("span", { class: "id" }, accountId), " (",
    screenName(accountId), ")");
}

/** A span that shows the account's screen name once looked up ("no screen name" if none). */
export function screenName(accountId) {
  const shown = h("span", { class: "screen-name", "data-account": accountId });
  names.nameOf(accountId).then((name) => { shown.textContent = name || "(no screen name)"; });
  return shown;
}

function evidenceItem(item) {
  const figures = Object.entries(item.details || {}).sort(([a], [b]) => a.localeCompare(b));
  return h("li", { class: "evidence" },
    h("h3", {}, words(item.kind)),
    h("p", {}, item.description || ""),
    figures.length ? details(figures.map(([name, value]) => [words(name), value])) : null,
    (item.gameIds || []).length
      ? h("p", {}, "Games: ", h("span", { class: "id" }, item.gameIds.join(", ")))
      : null);
}

function historyTable(steps) {
  return h("table", { class: "log" },
    h("caption", {}, "History: each raise and update (oldest first)"),
    h("thead", {}, h("tr", {},
      ["#", "When", "What", "Severity", "Evidence"].map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, steps.map((step) => h("tr", { "data-action": step.action },
      h("td", { "data-label": "#" }, String(step.sequence)),
      h("td", { "data-label": "When" }, when(step.at)),
      h("td", { "data-label": "What", class: "action" },
        label(HISTORY_ACTIONS, step.action), step.detail ? ` (${step.detail})` : ""),
      h("td", { "data-label": "Severity" }, severityBadge(step.severity)),
      h("td", { "data-label": "Evidence" },
        (step.evidence || []).map((item) => item.description || words(item.kind)).join("; "))))));
}

function openCaseForm(alert, navigate) {
  const form = h("form", { class: "panel", "aria-labelledby": "open-case-title" },
    h("h2", { id: "open-case-title" }, "Open a case"),
    h("div", { class: "field" },
      h("label", { for: "open-note" }, "Note (optional)"),
      h("textarea", { id: "open-note", name: "note", rows: 2, maxlength: 2000 })),
    h("button", { type: "submit" }, "Open a case from this alert"));
  return submitting(form, async () => {
    const opened = await client.openCase([alert.alertId], field(form, "note"));
    navigate(`#/cases/${encodeURIComponent(opened.caseId)}`, "Case opened.");
  });
}

function resolveForm(alert, refresh) {
  const form = h("form", { class: "panel", "aria-labelledby": "resolve-alert-title" },
    h("h2", { id: "resolve-alert-title" }, "Resolve without a case"),
    h("fieldset", {},
      h("legend", {}, "Outcome"),
      h("label", { class: "choice" },
        h("input", { type: "radio", name: "status", value: "ALERT_STATUS_DISMISSED", checked: true }),
        " Dismiss (no breach)"),
      h("label", { class: "choice" },
        h("input", { type: "radio", name: "status", value: "ALERT_STATUS_CONFIRMED" }),
        " Confirm (a breach; sanctions need a case)")),
    h("div", { class: "field" },
      h("label", { for: "resolve-alert-note" }, "Note"),
      h("textarea", { id: "resolve-alert-note", name: "note", rows: 2, maxlength: 2000 })),
    h("button", { type: "submit" }, "Resolve alert"));
  return submitting(form, async () => {
    await client.resolveAlert(alert.alertId, form.elements.namedItem("status").value,
      field(form, "note"));
    await refresh("Alert resolved.");
  });
}

export async function render(main, [alertId], { navigate, me, refresh }) {
  const [alert, inCase] = await Promise.all([
    client.getAlert(alertId), client.listCases({ alertId, pageSize: 1 }),
  ]);
  const holder = (inCase.cases || [])[0];
  const open = alert.status === "ALERT_STATUS_OPEN";
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/alerts" }, "Alerts")),
    h("h1", { tabindex: -1 }, `${label(ALERT_KINDS, alert.kind)} alert ${short(alert.alertId)}`),
    details([
      ["Alert id", h("span", { class: "id" }, alert.alertId)],
      ["Severity", severityBadge(alert.severity)],
      ["Status", statusBadge(ALERT_STATUSES, alert.status)],
      ["Detector", alert.detector],
      ["Score", `${Number(alert.score || 0)}${alert.scoreMeaning ? ` (${alert.scoreMeaning})` : ""}`],
      ["Raised", when(alert.raisedAt)],
      ["Last new evidence", alert.updatedAt ? when(alert.updatedAt) : null],
      ["Follows", alert.previousAlertId
        ? h("a", { href: `#/alerts/${encodeURIComponent(alert.previousAlertId)}` },
          `alert ${short(alert.previousAlertId)}`)
        : null],
      ["Wallets frozen automatically", alert.accountsFrozen ? "Yes" : "No"],
      ["Resolved by", alert.resolvedByAccountId ? actor(alert.resolvedByAccountId, me) : null],
      ["Resolved", alert.resolvedAt ? when(alert.resolvedAt) : null],
      ["Resolution note", alert.resolutionNote || null],
    ]),
    h("h2", {}, "Accounts"),
    h("ul", { class: "ids" }, (alert.subjectAccountIds || []).map((id) => h("li", {}, accountLink(id)))),
    h("h2", {}, "Evidence"),
    (alert.evidence || []).length
      ? h("ul", { class: "evidence-list" }, alert.evidence.map(evidenceItem))
      : h("p", {}, "No evidence recorded."),
    (alert.history || []).length ? historyTable(alert.history) : null,
    h("h2", {}, "Case"),
    holder
      ? h("p", {}, "In ", h("a", { href: `#/cases/${encodeURIComponent(holder.caseId)}` },
        `case ${short(holder.caseId)}`), ` (${label(CASE_STATUSES, holder.status)}).`)
      : h("p", {}, "In no case."),
    !holder && open ? openCaseForm(alert, navigate) : null,
    // An alert in a case is resolved with its case (ResolveCase resolves its alerts).
    !holder && open ? resolveForm(alert, refresh) : null);
}
