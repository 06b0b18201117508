// An account's risk profile (GetRiskProfile): its screen name, its score, the accounts linked to it,
// its open alerts, its disconnections, and the cases that name it.

import * as client from "../client.js";
import { details, h, replace } from "../dom.js";
import { when } from "../labels.js";
import { accountLink, screenName } from "./alert.js";
import { alertCard } from "./alerts.js";
import { caseCard } from "./cases.js";

export async function render(main, [accountId], { me }) {
  const [profile, cases] = await Promise.all([
    client.riskProfile(accountId), client.listCases({ accountId, pageSize: 20 }),
  ]);
  const score = Number(profile.riskScore || 0);
  const linked = profile.linkedAccountIds || [];
  const alerts = profile.openAlerts || [];
  const allAlerts = `#/alerts?${new URLSearchParams({ accountId, status: "" })}`;
  const allCases = `#/cases?${new URLSearchParams({ accountId, status: "" })}`;
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/alerts" }, "Alerts")),
    h("h1", { tabindex: -1 }, "Risk profile"),
    details([
      ["Account id", h("span", { class: "id" }, accountId)],
      ["Screen name", screenName(accountId)],
      ["Risk score", h("span", {},
        h("meter", { id: "risk-meter", min: 0, max: 100, low: 25, high: 50, optimum: 0, value: score,
          "aria-label": "Risk score out of 100" }), ` ${score} / 100`)],
      ["Disconnections (30 days)", String(profile.recentDisconnects || 0)],
      ["In losing positions", String(profile.recentLosingDisconnects || 0)],
      ["As of", when(profile.updatedAt)],
    ]),
    h("p", { class: "hint" },
      "The score adds 10, 25, 50 or 100 for each open low, medium, high or critical alert, up to 100."),
    h("h2", {}, `Linked accounts (${linked.length})`),
    linked.length ? h("ul", { class: "ids" }, linked.map((id) => h("li", {}, accountLink(id))))
      : h("p", {}, "None: no shared device, address or mailbox."),
    h("h2", {}, `Open alerts (${alerts.length})`),
    alerts.length ? h("ul", { class: "cards", "aria-label": "Open alerts" }, alerts.map((a) => alertCard(a)))
      : h("p", {}, "None."),
    h("p", {}, h("a", { href: allAlerts }, "Every alert that names this account")),
    h("h2", {}, "Cases"),
    (cases.cases || []).length
      ? h("ul", { class: "cards", "aria-label": "Cases" }, cases.cases.map((c) => caseCard(c, me)))
      : h("p", {}, "None."),
    cases.nextPageToken ? h("p", {}, h("a", { href: allCases }, "Every case that names this account"))
      : null);
}
