// The alerts list: filters (kind, minimum severity, status, account), pages, and a
// case opened from the alerts an officer selects.

import * as client from "../client.js";
import { field, h, replace, short, submitting } from "../dom.js";
import { paged } from "../pager.js";
import {
  ALERT_KINDS, ALERT_STATUSES, SEVERITIES, label, severityBadge, statusBadge, when,
} from "../labels.js";

const PAGE = 25;

function select(name, text, options, chosen) {
  const id = `filter-${name}`;
  return h("div", { class: "field" },
    h("label", { for: id }, text),
    h("select", { id, name },
      options.map(([value, words]) => h("option", { value, selected: value === chosen }, words))));
}

/** One alert as a list item; `selectable` adds the checkbox that puts it in a new case. */
export function alertCard(alert, { selectable = false } = {}) {
  const subjects = alert.subjectAccountIds || [];
  const title = `${label(ALERT_KINDS, alert.kind)} alert ${short(alert.alertId)}`;
  return h("li", { class: "card", "data-alert-id": alert.alertId },
    selectable && alert.status === "ALERT_STATUS_OPEN"
      ? h("label", { class: "pick" },
          h("input", { type: "checkbox", name: "alert", value: alert.alertId }),
          h("span", { class: "visually-hidden" }, `Select ${title} for a new case`))
      : null,
    h("div", { class: "card-body" },
      h("a", { href: `#/alerts/${encodeURIComponent(alert.alertId)}`, class: "card-title" }, title),
      h("p", { class: "badges" }, severityBadge(alert.severity), " ",
        statusBadge(ALERT_STATUSES, alert.status),
        alert.accountsFrozen ? h("span", { class: "badge frozen" }, "Frozen") : null),
      h("p", { class: "meta" }, "Raised ", when(alert.raisedAt || alert.occurredAt),
        ` · ${subjects.length} account${subjects.length === 1 ? "" : "s"}`,
        ` · ${alert.detector || "-"} score ${Number(alert.score || 0)}`)));
}

function filtersForm(params) {
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter alerts" },
    select("kind", "Kind", [["", "Any kind"], ...Object.entries(ALERT_KINDS)], params.get("kind") || ""),
    select("minSeverity", "Minimum severity",
      [["", "Any severity"], ...Object.entries(SEVERITIES)], params.get("minSeverity") || ""),
    select("status", "Status", [["", "Any status"], ...Object.entries(ALERT_STATUSES)],
      params.has("status") ? params.get("status") : "ALERT_STATUS_OPEN"),
    h("div", { class: "field" },
      h("label", { for: "filter-account" }, "Account id"),
      h("input", { id: "filter-account", name: "accountId", value: params.get("accountId") || "",
        autocomplete: "off", spellcheck: "false" })),
    h("button", { type: "submit" }, "Show alerts"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = new URLSearchParams();
    for (const name of ["kind", "minSeverity", "status", "accountId"]) {
      chosen.set(name, field(form, name));
    }
    location.hash = `#/alerts?${chosen}`;
  });
  return form;
}

function openCaseForm(list, navigate) {
  const count = h("span", {}, "0");
  const button = h("button", { type: "submit", disabled: true },
    "Open a case from the selected alerts (", count, ")");
  const form = h("form", { class: "panel", "aria-label": "Open a case" },
    h("h2", {}, "Open a case"),
    h("p", { class: "hint" }, "Select open alerts above; a case groups them for one review."),
    h("div", { class: "field" },
      h("label", { for: "case-note" }, "Note (optional)"),
      h("textarea", { id: "case-note", name: "note", rows: 2, maxlength: 2000 })),
    button);
  const chosen = () => [...list.querySelectorAll("input[name=alert]:checked")].map((c) => c.value);
  list.addEventListener("change", () => {
    count.textContent = String(chosen().length);
    button.disabled = chosen().length === 0;
  });
  return submitting(form, async () => {
    const opened = await client.openCase(chosen(), field(form, "note"));
    navigate(`#/cases/${encodeURIComponent(opened.caseId)}`, "Case opened.");
  });
}

export async function render(main, params, { navigate }) {
  const filters = {
    kind: params.get("kind") || "",
    minSeverity: params.get("minSeverity") || "",
    status: params.has("status") ? params.get("status") : "ALERT_STATUS_OPEN",
    accountId: params.get("accountId") || "",
  };
  const { list, nodes } = await paged({
    label: "Alerts",
    noun: "alert",
    fetchPage: async (pageToken) => {
      const page = await client.listAlerts({ ...filters, pageToken, pageSize: PAGE });
      return { items: page.alerts || [], nextPageToken: page.nextPageToken };
    },
    card: (alert) => alertCard(alert, { selectable: true }),
  });
  replace(main,
    h("h1", { tabindex: -1 }, "Alerts"),
    filtersForm(params), ...nodes, openCaseForm(list, navigate));
}
