// One case: its alerts, subjects, sanctions and log (who did what, when), and what an
// officer does with an open case: assign it, note it, resolve it as cleared or as
// sanctioned with the sanctions the API offers (freeze wallet, suspend, terminate, on
// a subject; forbid a pair of subjects). A suspension or termination is a proposal until
// a second officer approves it here (or anyone rejects it). A resolved case still takes
// notes.

import * as client from "../client.js";
import { details, field, h, problem, replace, short, submitting } from "../dom.js";
import {
  ACCOUNT_SANCTIONS, ALERT_KINDS, CASE_STATUSES, FORBID_PAIR, LOG_ACTIONS, SANCTIONS,
  actor, label, severityBadge, statusBadge, when,
} from "../labels.js";
import { accountLink, accountNamed } from "./alert.js";

// The sanctions a second officer must approve before they take effect.
const SECOND_OFFICER = ["SANCTION_KIND_SUSPEND_ACCOUNT", "SANCTION_KIND_TERMINATE_ACCOUNT"];

/** A sanction in words, each sanctioned account by its id with its screen name beside it. */
function sanctionText(sanction) {
  const pair = sanction.otherAccountId ? [" and ", accountNamed(sanction.otherAccountId)] : [];
  const state = sanction.awaitingApproval
    ? ` (awaiting a second officer; proposed by ${sanction.proposedByAccountId})`
    : sanction.approvedByAccountId
      ? ` (proposed by ${sanction.proposedByAccountId}, approved by ${sanction.approvedByAccountId})`
      : "";
  return [`${label(SANCTIONS, sanction.kind)}: `, accountNamed(sanction.accountId), ...pair, state];
}

// Sanctions another officer proposed: approve (they take effect, the case is resolved)
// or reject them. The proposer may withdraw, never approve, their own proposal.
function approvalForm(found, pending, me, refresh) {
  const proposer = pending[0].proposedByAccountId;
  const mine = proposer === me;
  const form = h("form", { class: "panel", "aria-labelledby": "approval-title" },
    h("h2", { id: "approval-title" }, "Sanctions awaiting a second officer"),
    h("ul", {}, pending.map((s) => h("li", {}, sanctionText(s)))),
    mine ? h("p", {}, "You proposed them: another officer must approve them.") : null,
    h("div", { class: "field" },
      h("label", { for: "approval-note" }, "Note (required to reject)"),
      h("textarea", { id: "approval-note", name: "note", rows: 2, maxlength: 2000 })),
    h("div", { class: "buttons" },
      mine ? null : h("button", { type: "submit", name: "action", value: "approve", class: "danger" },
        "Approve: they take effect"),
      h("button", { type: "submit", name: "action", value: "reject", class: "secondary" },
        mine ? "Withdraw the proposal" : "Reject")));
  return submitting(form, async (button) => {
    if (button && button.value === "approve") {
      await client.approveSanctions(found.caseId, field(form, "note"));
      await refresh("Sanctions approved: the case is resolved.");
    } else {
      await client.rejectSanctions(found.caseId, field(form, "note"));
      await refresh("Proposal rejected: nothing of it took effect.");
    }
  });
}

async function alertItems(alertIds) {
  const alerts = await Promise.all(alertIds.map((id) => client.getAlert(id)));
  return alerts.map((alert) => h("li", {},
    h("a", { href: `#/alerts/${encodeURIComponent(alert.alertId)}` },
      `${label(ALERT_KINDS, alert.kind)} alert ${short(alert.alertId)}`),
    " ", severityBadge(alert.severity)));
}

function logTable(entries, me) {
  return h("table", { class: "log" },
    h("caption", {}, "Log: who did what, when (oldest first)"),
    h("thead", {}, h("tr", {},
      ["#", "When", "Who", "What", "Detail"].map((name) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, entries.map((entry) => h("tr", { "data-action": entry.action },
      h("td", { "data-label": "#" }, String(entry.sequence)),
      h("td", { "data-label": "When" }, when(entry.at)),
      h("td", { "data-label": "Who", class: "id" }, actor(entry.actor, me)),
      h("td", { "data-label": "What", class: "action" }, label(LOG_ACTIONS, entry.action)),
      h("td", { "data-label": "Detail" }, entry.detail || "")))));
}

function assignForm(found, me, refresh) {
  const form = h("form", { class: "panel", "aria-labelledby": "assign-title" },
    h("h2", { id: "assign-title" }, "Assign"),
    h("p", {}, "Assigned to ",
      found.assigneeAccountId ? actor(found.assigneeAccountId, me) : "nobody", "."),
    h("div", { class: "field" },
      h("label", { for: "assignee" }, "Officer's account id (empty: nobody)"),
      h("input", { id: "assignee", name: "assignee", value: found.assigneeAccountId || "",
        autocomplete: "off", spellcheck: "false" })),
    h("div", { class: "buttons" },
      h("button", { type: "submit", name: "action", value: "me" }, "Assign to me"),
      h("button", { type: "submit", name: "action", value: "other", class: "secondary" },
        "Assign to this officer")));
  return submitting(form, async (button) => {
    const assignee = button && button.value === "me" ? me : field(form, "assignee");
    await client.assignCase(found.caseId, assignee);
    await refresh(assignee ? "Case assigned." : "Case unassigned.");
  });
}

function noteForm(found, refresh) {
  const form = h("form", { class: "panel", "aria-labelledby": "note-title" },
    h("h2", { id: "note-title" }, "Add a note"),
    h("div", { class: "field" },
      h("label", { for: "case-note-text" }, "Note"),
      h("textarea", { id: "case-note-text", name: "note", rows: 3, required: true, maxlength: 2000 })),
    h("button", { type: "submit" }, "Add note"));
  return submitting(form, async () => {
    await client.noteCase(found.caseId, field(form, "note"));
    await refresh("Note added.");
  });
}

/** The sanctions chosen in the resolve form: [{kind, accountId, otherAccountId?}]. */
function chosenSanctions(form, pairs) {
  const single = [...form.querySelectorAll("input[name=sanction]:checked")].map((box) => ({
    kind: box.dataset.kind, accountId: box.dataset.account,
  }));
  return single.concat(pairs.map(([one, other]) => ({
    kind: FORBID_PAIR, accountId: one, otherAccountId: other,
  })));
}

function subjectSanctions(subject, index) {
  return h("fieldset", { class: "subject" },
    h("legend", {}, "Account ", accountNamed(subject)),
    Object.entries(ACCOUNT_SANCTIONS).map(([kind, [words, effect]]) => {
      const id = `sanction-${index}-${kind}`;
      return h("div", { class: "choice wrap" },
        h("input", { type: "checkbox", id, name: "sanction", "data-kind": kind, "data-account": subject,
          "aria-describedby": `${id}-effect` }),
        h("label", { for: id }, ` ${words}`),
        h("span", { id: `${id}-effect`, class: "hint" }, ` (${effect})`));
    }));
}

function pairPicker(subjects, pairs) {
  const list = h("ul", { class: "pairs", "aria-label": "Pairs to forbid", "aria-live": "polite" });
  const choose = (id, text, chosen) => h("div", { class: "field" },
    h("label", { for: id }, text),
    h("select", { id }, subjects.map((s, i) => h("option", { value: s, selected: i === chosen }, s))));
  const first = choose("pair-first", "First account", 0);
  const second = choose("pair-second", "Second account", 1);
  const show = () => list.replaceChildren(...pairs.map((pair, index) => h("li", {},
    accountNamed(pair[0]), " and ", accountNamed(pair[1]), " ",
    h("button", { type: "button", class: "secondary", onclick: () => { pairs.splice(index, 1); show(); } },
      "Remove"))));
  const add = h("button", { type: "button", class: "secondary", onclick: () => {
    const one = first.querySelector("select").value;
    const other = second.querySelector("select").value;
    const known = pairs.some(([a, b]) => (a === one && b === other) || (a === other && b === one));
    if (one !== other && !known) pairs.push([one, other]);
    show();
  } }, "Add pair");
  return h("fieldset", { class: "subject" },
    h("legend", {}, "Forbid a pair (never seated together)"),
    first, second, add, list);
}

function resolveForm(found, refresh) {
  const subjects = found.subjectAccountIds || [];
  const pairs = [];
  const sanctions = h("fieldset", { class: "sanctions", disabled: true },
    h("legend", {}, "Sanctions (each one is applied by the service that owns it)"),
    subjects.map(subjectSanctions),
    subjects.length > 1 ? pairPicker(subjects, pairs) : null);
  // Holds the confirm button only while a resolution is being reviewed: until then the
  // form has no submit button, so Enter on a field cannot resolve the case.
  const confirm = h("div", { class: "confirm" });
  const form = h("form", { class: "panel", "aria-labelledby": "resolve-title" },
    h("h2", { id: "resolve-title" }, "Resolve"),
    h("fieldset", {},
      h("legend", {}, "Outcome"),
      h("label", { class: "choice" },
        h("input", { type: "radio", name: "outcome", value: "CASE_STATUS_CLEARED", checked: true }),
        " Cleared: no breach, no sanction"),
      h("label", { class: "choice" },
        h("input", { type: "radio", name: "outcome", value: "CASE_STATUS_SANCTIONED" }),
        " Sanctioned: a breach, with the sanctions below")),
    sanctions,
    h("div", { class: "field" },
      h("label", { for: "resolve-note" }, "Resolution note (required)"),
      h("textarea", { id: "resolve-note", name: "note", rows: 3, required: true, maxlength: 2000 })),
    h("button", { type: "button", onclick: () => review() }, "Review resolution"),
    confirm);
  form.addEventListener("change", () => {
    sanctions.disabled = form.elements.namedItem("outcome").value !== "CASE_STATUS_SANCTIONED";
    confirm.replaceChildren();
  });

  // A resolution cannot be undone: the officer reads what it imposes, then confirms.
  function review() {
    form.querySelector(".problem")?.remove();
    const outcome = form.elements.namedItem("outcome").value;
    const chosen = outcome === "CASE_STATUS_SANCTIONED" ? chosenSanctions(form, pairs) : [];
    if (!field(form, "note")) {
      form.append(problem("Write a resolution note: what was found or decided."));
      form.elements.namedItem("note").focus();
      return;
    }
    if (outcome === "CASE_STATUS_SANCTIONED" && chosen.length === 0) {
      form.append(problem("A sanctioned case needs at least one sanction."));
      return;
    }
    const heading = h("h3", { tabindex: -1 }, "Confirm: this cannot be undone");
    replace(confirm, heading,
      h("p", {}, `Resolve case ${short(found.caseId)} as ${label(CASE_STATUSES, outcome).toLowerCase()}`,
        chosen.length ? " and impose:" : " with no sanction."),
      chosen.length ? h("ul", {}, chosen.map((s) => h("li", {}, sanctionText(s)))) : null,
      chosen.some((s) => SECOND_OFFICER.includes(s.kind))
        ? h("p", {}, "Suspensions and terminations take effect only once a second officer "
          + "approves them; the case stays open until then.")
        : null,
      h("div", { class: "buttons" },
        h("button", { type: "submit", class: "danger" }, "Confirm resolution"),
        h("button", { type: "button", class: "secondary", onclick: () => { confirm.replaceChildren(); } },
          "Back")));
    heading.focus();
  }

  return submitting(form, async () => {
    const outcome = form.elements.namedItem("outcome").value;
    const chosen = outcome === "CASE_STATUS_SANCTIONED" ? chosenSanctions(form, pairs) : [];
    const after = await client.resolveCase(found.caseId, outcome, field(form, "note"), chosen);
    await refresh(after.status === "CASE_STATUS_OPEN"
      ? "Proposed: a second officer must approve the suspension or termination."
      : "Case resolved.");
  });
}

export async function render(main, [caseId], { me, refresh }) {
  const found = await client.getCase(caseId);
  const alerts = await alertItems(found.alertIds || []);
  const open = found.status === "CASE_STATUS_OPEN";
  const sanctions = found.sanctions || [];
  const pending = sanctions.filter((s) => s.awaitingApproval);
  replace(main,
    h("p", { class: "crumbs" }, h("a", { href: "#/cases" }, "Cases")),
    h("h1", { tabindex: -1 }, `Case ${short(found.caseId)}`),
    details([
      ["Case id", h("span", { class: "id" }, found.caseId)],
      ["Status", statusBadge(CASE_STATUSES, found.status)],
      ["Opened", when(found.openedAt)],
      ["Opened by", actor(found.openedBy, me)],
      ["Assigned to", found.assigneeAccountId ? actor(found.assigneeAccountId, me) : "nobody"],
      ["Resolved", found.resolvedAt ? when(found.resolvedAt) : null],
    ]),
    h("h2", {}, `Alerts (${alerts.length})`),
    h("ul", { class: "ids" }, alerts),
    h("h2", {}, "Accounts"),
    h("ul", { class: "ids" }, (found.subjectAccountIds || []).map((id) => h("li", {}, accountLink(id)))),
    h("h2", {}, `Sanctions (${sanctions.length})`),
    sanctions.length ? h("ul", { class: "sanction-list" }, sanctions.map((s) => h("li", {}, sanctionText(s))))
      : h("p", {}, "None."),
    logTable(found.log || [], me),
    open ? assignForm(found, me, refresh) : null,
    noteForm(found, refresh),
    pending.length ? approvalForm(found, pending, me, refresh) : null,
    open && !pending.length ? resolveForm(found, refresh) : null);
}
