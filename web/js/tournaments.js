// Tournaments: the tournament lobby (#/tournaments: GET /v1/tournaments, each with its
// kind, buy-in and fee, seats taken, status and its rules as data) and a tournament's
// page (#/tournament/<id>: GET /v1/tournaments/{id}, read again every few seconds while
// shown), with Register and Unregister (POST /v1/tournaments/{id}:register and
// :unregister) whose refusal is said as the server words it. The page draws the bracket
// laid out by bracket.js (rounds as columns, byes, winners), the seed's commitment and,
// after the draw, the seed, and the standings with each place's prize once paid. Players
// are shown by their screen names (names.js), always as text.
import { api, formatMoney } from "/js/api.js";
import { accountsOf, bracketColumns, placeText, standingsInOrder } from "/js/bracket.js";
import { names } from "/js/names.js";
import { enumText, field, form, h } from "/js/ui.js";

const REFRESH_MS = 2000;

const KINDS = {
  KIND_SIT_AND_GO: "Sit & Go", KIND_SCHEDULED: "Scheduled",
  KIND_SATELLITE: "Satellite", KIND_FREEROLL: "Freeroll",
};

const money = (minorUnits, currency) => formatMoney({ minorUnits: String(minorUnits || "0"), currency });

const when = (timestamp) => (timestamp ? new Date(timestamp).toLocaleString() : "");

export function kindText(rules) {
  return KINDS[rules.kind] || enumText(rules.kind, "KIND_");
}

export function statusText(tournament) {
  const status = enumText(tournament.status, "STATUS_");
  return tournament.cancelReason ? `${status}: ${tournament.cancelReason}` : status;
}

/** "3 points in round 1, 5 in round 2, 7 in round 3 and later" (the last length repeats). */
export function lengthsText(lengths) {
  const points = (lengths || []).map(Number);
  if (points.length === 0) return "";
  if (points.length === 1) return `${points[0]} points every round`;
  return points.map((p, i) => {
    const unit = i === 0 ? `${p} points` : String(p);
    return i === points.length - 1 ? `${unit} in round ${i + 1} and later` : `${unit} in round ${i + 1}`;
  }).join(", ");
}

/** Seats taken and seats in all: a Sit & Go's seats, a scheduled event's maximum. */
export function seatsText(tournament) {
  const rules = tournament.rules || {};
  const taken = (tournament.entrants || []).length;
  if (rules.sitAndGo) return `${taken}/${rules.sitAndGo.seats}`;
  if (rules.scheduled) return `${taken}/${rules.scheduled.maxEntrants} (at least ${rules.scheduled.minEntrants})`;
  return String(taken);
}

export function entryText(rules) {
  return `${money(rules.buyIn, rules.currency)} + ${money(rules.entryFee, rules.currency)} fee`;
}

/** What each paid finish wins by the prize table ("1: 52.06 USD (65 %)", "3-4: ... each"). */
export function prizesText(tournament) {
  const places = tournament.prizePlaces || [];
  if (places.length === 0) return "";
  const each = places.map((p) => {
    const shared = Number(p.worstPlace) > Number(p.bestPlace);
    return `${placeText(p.bestPlace, p.worstPlace)}: ${formatMoney(p.amount)}${shared ? " each" : ""}`
      + ` (${Number(p.shareBasisPoints) / 100} %)`;
  });
  return `${each.join(", ")}, for ${tournament.prizeField} entrants`;
}

/** A satellite's tickets for its field (so far): "2 tickets worth 10.00 USD (places 1-2,
 * won by the players left after round 2: the later rounds are not played); 1.07 USD over:
 * 0.53 USD to each of places 3-4, 0.01 USD to 1st; for 7 entrants". */
export function ticketsText(tournament) {
  const plan = tournament.satellitePrizes;
  if (!plan || !Number(plan.tickets)) return "";
  const tickets = Number(plan.tickets);
  const rounds = Number(plan.roundsPlayed);
  const won = tickets === 1
    ? "to the winner of the final"
    : `places ${placeText(1, tickets)}, won by the players left after round ${rounds}: the later rounds are not played`;
  const parts = [`${tickets} ticket${tickets === 1 ? "" : "s"} worth ${formatMoney(plan.ticketValue)} (${won})`];
  if (Number(plan.remainder && plan.remainder.minorUnits) > 0) {
    const shared = Number(plan.remainderWorstPlace) > Number(plan.remainderBestPlace);
    let over = `${formatMoney(plan.remainder)} over: ${formatMoney(plan.remainderEach)} to `
      + (shared ? `each of places ${placeText(plan.remainderBestPlace, plan.remainderWorstPlace)}`
        : `place ${plan.remainderBestPlace}`);
    if (Number(plan.remainderToFirst && plan.remainderToFirst.minorUnits) > 0) {
      over += `, ${formatMoney(plan.remainderToFirst)} to 1st`;
    }
    parts.push(over);
  }
  return `${parts.join("; ")}; for ${tournament.prizeField} entrants`;
}

/** A tournament's rules as [label, text] pairs, every one of them from the data. */
export function rulesFacts(tournament) {
  const rules = tournament.rules || {};
  const facts = [["Kind", kindText(rules)]];
  if (rules.sitAndGo) {
    facts.push(["Format", `Single elimination, ${rules.sitAndGo.seats} seats, starts when the last seat is taken`]);
  } else if (rules.scheduled) {
    const s = rules.scheduled;
    facts.push(["Format", `Single elimination, ${s.minEntrants} to ${s.maxEntrants} entrants (cancelled and refunded below ${s.minEntrants})`]);
    facts.push(["Schedule", `registration ${when(s.registrationOpensAt)} to ${when(s.registrationClosesAt)}, starts ${when(s.startsAt)}`]);
  }
  facts.push(["Matches", lengthsText(rules.matchLengths)]);
  facts.push(["Match rules", [rules.crawford ? "Crawford rule" : "no Crawford rule",
                              rules.jacoby ? "Jacoby rule" : "no Jacoby rule",
                              rules.beaver ? "beavers" : "no beavers"].join(", ")]);
  facts.push(["Clock", rules.clock || ""]);
  facts.push(["Buy-in", entryText(rules)]);
  if (Number(rules.addedPrize || 0) > 0) facts.push(["Added prize", money(rules.addedPrize, rules.currency)]);
  facts.push(["Prize table", rules.prizeTable === "tickets"
    ? `tickets to tournament ${rules.targetTournamentId}` : rules.prizeTable || ""]);
  const prizes = prizesText(tournament);
  if (prizes) facts.push(["Prizes by place", prizes]);
  const tickets = ticketsText(tournament);
  if (tickets) facts.push(["Tickets", tickets]);
  return facts;
}

function factsList(tournament) {
  return h("dl", { class: "rules" },
    rulesFacts(tournament).flatMap(([label, text]) => [h("dt", {}, label), h("dd", {}, text)]));
}

const isEntrant = (tournament, client) => (tournament.entrants || []).includes(client.accountId);

// Register or Unregister, as the viewer's entry stands; the answer (the tournament as it
// is now) goes to `shown`, a refusal's reason to `message`.
function entryButton(tournament, message, shown, client) {
  if (tournament.status !== "STATUS_REGISTERING") return null;
  const entered = isEntrant(tournament, client);
  const verb = entered ? "unregister" : "register";
  const act = async (event) => {
    event.target.disabled = true;
    message.textContent = "";
    message.classList.remove("ok", "error");
    try {
      const answer = await client.post(
        `/v1/tournaments/${encodeURIComponent(tournament.tournamentId)}:${verb}`, {});
      message.textContent = entered ? `You left ${answer.name}.` : `You are registered for ${answer.name}.`;
      message.classList.add("ok");
      await shown(answer);
    } catch (error) {
      message.textContent = `${tournament.name}: ${error.message}`;
      message.classList.add("error");
      event.target.disabled = false;
    }
  };
  return h("button", { type: "button", class: verb, onclick: act }, entered ? "Unregister" : "Register");
}

function lobbyRow(tournament, message, refresh, client) {
  const rules = tournament.rules || {};
  const details = h("details", {}, h("summary", {}, "Rules"), factsList(tournament));
  return h("tr", { "data-tournament": tournament.tournamentId },
    h("th", { scope: "row" },
      h("a", { href: `#/tournament/${encodeURIComponent(tournament.tournamentId)}` }, tournament.name),
      details),
    h("td", { class: "kind" }, kindText(rules)),
    h("td", { class: "buy-in" }, entryText(rules)),
    h("td", { class: "seats" }, seatsText(tournament)),
    h("td", { class: "status" }, statusText(tournament)),
    h("td", { class: "entry" }, entryButton(tournament, message, refresh, client)));
}

export async function tournamentsView({ client = api } = {}) {
  const list = h("tbody");
  const message = h("p", { class: "message entry-message", role: "alert", "aria-live": "assertive" });
  let filter = {};
  const show = async (v = filter) => {
    filter = v;
    const query = new URLSearchParams();
    if (v.currency) query.set("currency", v.currency);
    if (v.status) query.set("status", v.status);
    const answer = await client.get(`/v1/tournaments?${query}`);
    const found = answer.tournaments || [];
    const rows = found.map((t) => lobbyRow(t, message, () => show(), client));
    list.replaceChildren(...(rows.length ? rows
      : [h("tr", {}, h("td", { colspan: 6 }, "No tournaments"))]));
  };
  const filters = form("Filter tournaments", [
    field("Currency", "currency", {}, [["", "Any"], ["USD", "USD"], ["PLAY", "Play money"], ["EUR", "EUR"]]),
    field("Status", "status", {}, [["", "Any"], ["STATUS_REGISTERING", "Registering"],
      ["STATUS_RUNNING", "Running"], ["STATUS_FINISHED", "Finished"], ["STATUS_CANCELLED", "Cancelled"]]),
  ], "Show tournaments", show);
  await show({});
  return h("section", { class: "panel" },
    h("h2", {}, "Tournaments"), filters, message,
    h("table", { class: "tournaments", "aria-label": "Tournaments" },
      h("thead", {}, h("tr", {}, h("th", {}, "Tournament"), h("th", {}, "Kind"), h("th", {}, "Buy-in"),
        h("th", {}, "Seats"), h("th", {}, "Status"), h("th", {}, ""))),
      list));
}

// --- one tournament -----------------------------------------------------------------

function seatLine(seat, book, viewer) {
  if (seat.kind === "bye") return h("li", { class: "seat bye" }, "bye");
  if (seat.kind === "to come") {
    return h("li", { class: "seat to-come" }, seat.from ? `winner of ${seat.from}` : "to come");
  }
  const classes = ["seat", seat.won ? "won" : "", seat.lost ? "lost" : "",
                   seat.accountId === viewer ? "me" : ""].filter(Boolean).join(" ");
  return h("li", { class: classes, "data-account": seat.accountId },
    book.label(seat.accountId), seat.won ? " (won)" : "");
}

function matchNote(match) {
  const parts = [match.length === 1 ? "1 point" : `${match.length} points`];
  if (match.decision && match.decision !== "played" && match.decision !== "bye") {
    parts.push(`decided by ${match.decision.replaceAll("_", " ")}`);
  } else if (match.state === "not_played") parts.push("not played: the tickets were won");
  else if (match.state !== "finished") parts.push(match.state);
  return parts.join(", ");
}

// The viewer's own match in play: its game, one click away.
function playLink(match, viewer) {
  const mine = match.seats.some((seat) => seat.accountId && seat.accountId === viewer);
  if (!mine || match.state !== "playing" || !match.gameId) return null;
  return h("a", { class: "play", href: `#/game/${encodeURIComponent(match.gameId)}` }, "Play your match");
}

export function bracketView(tournament, book = names, viewer = api.accountId) {
  const columns = bracketColumns(tournament.bracket);
  if (columns.length === 0) {
    return h("p", { class: "bracket-empty" }, "The bracket is drawn when registration closes.");
  }
  return h("div", { class: "bracket", role: "list", "aria-label": "Bracket" },
    columns.map((column) => h("section", { class: "round", role: "listitem", "data-round": column.round },
      h("h4", {}, column.title),
      h("ol", { class: "matches" }, column.matches.map((match) => h("li", {
        class: `match ${match.state}`, "data-match": match.matchId,
      }, h("span", { class: "match-id" }, match.matchId),
      h("ol", { class: "seats" }, match.seats.map((seat) => seatLine(seat, book, viewer))),
      h("span", { class: "match-note" }, matchNote(match)),
      playLink(match, viewer)))))));
}

function standingsTable(tournament, book) {
  const rows = standingsInOrder(tournament.standings).map((s) => h("tr", { "data-account": s.accountId },
    h("td", {}, placeText(s.bestPlace, s.worstPlace)), h("th", { scope: "row" }, book.label(s.accountId)),
    h("td", {}, String(s.wins || 0)), h("td", {}, s.alive ? "in" : "out"),
    h("td", { class: "prize" }, s.prize ? formatMoney(s.prize) : "")));
  return h("table", { class: "standings", "aria-label": "Standings" },
    h("thead", {}, h("tr", {}, h("th", {}, "Place"), h("th", {}, "Player"), h("th", {}, "Wins"),
      h("th", {}, ""), h("th", {}, "Prize"))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 5 }, "No standings before the draw"))));
}

function seedFacts(tournament, book) {
  const seating = (tournament.seating || []).map((id) => book.label(id)).join(", ");
  return h("dl", { class: "seed" },
    h("dt", {}, "Seed commitment (sha256)"), h("dd", { class: "commitment" }, tournament.seedCommitment || ""),
    h("dt", {}, "Seed"), h("dd", { class: "revealed" }, tournament.seed || "revealed when registration closes"),
    seating ? [h("dt", {}, "Drawn seating"), h("dd", { class: "seating" }, seating)] : null);
}

// A satellite's prizes: each ticket's holder, the tournament it enters them into (one
// click away) and its worth, and whether it has been used; none before its final.
function ticketsList(tournament, book) {
  const tickets = tournament.tickets || [];
  if (tickets.length === 0) return [];
  return [h("h3", {}, "Tickets won"),
    h("ul", { class: "tickets", "aria-label": "Tickets won" }, tickets.map((ticket) =>
      h("li", { class: ticket.used ? "ticket used" : "ticket", "data-account": ticket.accountId },
        `${book.label(ticket.accountId)}: a ticket worth ${formatMoney(ticket.value)} to `,
        h("a", { href: `#/tournament/${encodeURIComponent(ticket.targetTournamentId)}` },
          "its target tournament"),
        ticket.used ? " (used)" : " (not used yet)")))];
}

function tournamentBody(tournament, message, shown, client, book) {
  const entrants = (tournament.entrants || []).map((id) => book.label(id)).join(", ");
  const pool = tournament.prizePool && tournament.prizePool.currency ? formatMoney(tournament.prizePool) : "";
  return [
    h("p", { class: "status" }, `Status: ${statusText(tournament)} · seats ${seatsText(tournament)}`
      + (pool ? ` · prize pool ${pool}` : "")),
    h("div", { class: "actions" }, entryButton(tournament, message, shown, client)), message,
    h("h3", {}, "Rules"), factsList(tournament),
    h("h3", {}, "Entrants"), h("p", { class: "entrants" }, entrants || "Nobody yet"),
    h("h3", {}, "Seating draw"), seedFacts(tournament, book),
    h("h3", {}, "Bracket"), bracketView(tournament, book, client.accountId),
    h("h3", {}, "Standings and prizes"), standingsTable(tournament, book),
    ...ticketsList(tournament, book),
  ];
}

export async function tournamentView(tournamentId, { client = api, book = names } = {}) {
  const path = `/v1/tournaments/${encodeURIComponent(tournamentId)}`;
  const heading = h("h2", {}, "Tournament");
  const body = h("div", { class: "tournament-body" });
  const message = h("p", { class: "message entry-message", role: "alert", "aria-live": "assertive" });
  let drawn = "";
  let timer = null;
  let stopped = false;
  const shown = async (tournament) => {
    const seen = JSON.stringify(tournament);
    if (seen === drawn) return;  // unchanged: keep the page (and the focus) as it is
    drawn = seen;
    await book.load(accountsOf(tournament));
    heading.textContent = tournament.name;
    body.replaceChildren(...tournamentBody(tournament, message, shown, client, book));
  };
  const poll = async () => {
    try {
      await shown(await client.get(path));
    } catch (error) {
      message.textContent = error.message;
    }
    if (!stopped) timer = setTimeout(poll, REFRESH_MS);
  };
  await shown(await client.get(path));
  timer = setTimeout(poll, REFRESH_MS);
  const view = h("section", { class: "panel tournament", "data-tournament": tournamentId },
    h("p", {}, h("a", { href: "#/tournaments" }, "All tournaments")), heading, body);
  view.cleanup = () => { stopped = true; clearTimeout(timer); };
  return view;
}
