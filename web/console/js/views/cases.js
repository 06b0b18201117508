// The cases list: filters (status, assigned to me, account), newest first, in pages.

import * as client from "../client.js";
import { field, h, replace, short } from "../dom.js";
import { paged } from "../pager.js";
import { CASE_STATUSES, actor, label, statusBadge, when } from "../labels.js";

const PAGE = 25;

export function caseCard(found, me) {
  const alerts = (found.alertIds || []).length;
  const subjects = (found.subjectAccountIds || []).length;
  const sanctions = (found.sanctions || []).length;
  return h("li", { class: "card", "data-case-id": found.caseId },
    h("div", { class: "card-body" },
      h("a", { href: `#/cases/${encodeURIComponent(found.caseId)}`, class: "card-title" },
        `Case ${short(found.caseId)}`),
      h("p", { class: "badges" }, statusBadge(CASE_STATUSES, found.status)),
      h("p", { class: "meta" }, "Opened ", when(found.openedAt), ` by ${actor(found.openedBy, me)}`,
        ` · ${alerts} alert${alerts === 1 ? "" : "s"}, ${subjects} account${subjects === 1 ? "" : "s"}`,
        sanctions ? `, ${sanctions} sanction${sanctions === 1 ? "" : "s"}` : "",
        ` · assigned to ${found.assigneeAccountId ? actor(found.assigneeAccountId, me) : "nobody"}`)));
}

function filtersForm(params) {
  const chosen = params.has("status") ? params.get("status") : "CASE_STATUS_OPEN";
  const form = h("form", { class: "filters", role: "search", "aria-label": "Filter cases" },
    h("div", { class: "field" },
      h("label", { for: "cases-status" }, "Status"),
      h("select", { id: "cases-status", name: "status" },
        [["", "Any status"], ...Object.entries(CASE_STATUSES)].map(([value, words]) =>
          h("option", { value, selected: value === chosen }, words)))),
    h("div", { class: "field" },
      h("label", { for: "cases-account" }, "Account id"),
      h("input", { id: "cases-account", name: "accountId", value: params.get("accountId") || "",
        autocomplete: "off", spellcheck: "false" })),
    h("label", { class: "choice" },
      h("input", { type: "checkbox", name: "mine", checked: params.get("mine") === "1" }),
      " Assigned to me"),
    h("button", { type: "submit" }, "Show cases"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams({ status: field(form, "status"), accountId: field(form, "accountId") });
    if (form.elements.namedItem("mine").checked) next.set("mine", "1");
    location.hash = `#/cases?${next}`;
  });
  return form;
}

export async function render(main, params, { me }) {
  const filters = {
    status: params.has("status") ? params.get("status") : "CASE_STATUS_OPEN",
    accountId: params.get("accountId") || "",
    assigneeAccountId: params.get("mine") === "1" ? me : "",
  };
  const { nodes } = await paged({
    label: "Cases",
    noun: "case",
    fetchPage: async (pageToken) => {
      const page = await client.listCases({ ...filters, pageToken, pageSize: PAGE });
      return { items: page.cases || [], nextPageToken: page.nextPageToken };
    },
    card: (found) => caseCard(found, me),
  });
  replace(main, h("h1", { tabindex: -1 }, "Cases"), filtersForm(params), ...nodes);
}
