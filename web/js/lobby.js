// The lobby: tables (filtered; each with the commission the viewer would pay there),
// creating and joining one (a money game may be played for table stakes, tablestakes.js); the lobby chat (lobbychat.js); the leaderboard; and the
// queue: enter it, watch the ticket (the server stream WatchQueueTicket over REST), leave
// it. Players are shown by their screen names (names.js).
import { api, formatMoney } from "/js/api.js";
import { lobbyChatPanel } from "/js/lobbychat.js";
import { names } from "/js/names.js";
import { stakesText } from "/js/tablestakes.js";
import { enumText, field, form, h, key, say, toMinor } from "/js/ui.js";

function rulesFrom(v) {
  const kind = v.kind;
  const rules = { kind, stake: { minorUnits: toMinor(v.stake), currency: v.currency } };
  if (kind === "PLAY_KIND_MATCH") rules.matchLength = Number(v.matchLength || 1);
  if (v.beaver) rules.beaver = true;
  // Table stakes (tables only): each player's bring-in; the server says what it refuses.
  if (v.tableStakes) rules.tableStakesMinorUnits = toMinor(v.tableStakes);
  return rules;
}

function rulesText(rules) {
  const what = rules.kind === "PLAY_KIND_MATCH" ? `${rules.matchLength}-point match`
                                                : "money game";
  const stakes = stakesText(rules);
  return `${what}, ${formatMoney(rules.stake)}${rules.kind === "PLAY_KIND_MATCH" ? "" : " a point"}` +
    (stakes ? `, ${stakes}` : "");
}

const ruleFields = () => [
  field("Kind", "kind", {}, [["PLAY_KIND_MONEY_GAME", "Money game"], ["PLAY_KIND_MATCH", "Match"]]),
  field("Match length (matches)", "matchLength", { type: "number", min: 1, max: 25, value: 3 }),
  field("Stake", "stake", { inputmode: "decimal", required: true, value: "5.00" }),
  field("Currency", "currency", {}, [["USD", "USD (real money)"], ["PLAY", "Play money"], ["EUR", "EUR"]]),
];

// A money game played for table stakes: each player brings this much and games follow
// one another until one holds both (empty: an ordinary table). The label avoids the word
// "stake", which names the stake per point.
const tableStakesField = () => h("div", {},
  field("Bring-in per player (optional)", "tableStakes",
        { inputmode: "decimal", placeholder: "none", "aria-describedby": "bring-in-hint" }),
  h("p", { class: "hint", id: "bring-in-hint" },
    "Table stakes: each player brings this much, held; games go on until one holds both."));

function tableRow(table, go) {
  const seated = (table.players || []).map((p) => `${names.label(p.accountId)} (${Math.round(p.rating)})`).join(", ");
  const commission = table.commission
    ? `${formatMoney(table.commission.commissionPerPlayer)} (${(Number(table.commission.rate) * 100).toFixed(1)} %)`
    : "not quoted";
  const mine = table.createdByAccountId === api.accountId;
  const join = async () => {
    try {
      const joined = await api.post(`/v1/tables/${table.tableId}:join`, { idempotencyKey: key() });
      if (joined.gameId) go(`#/game/${joined.gameId}`);
    } catch (error) {
      say(error.message);
    }
  };
  return h("tr", { "data-table": table.tableId },
    h("td", {}, rulesText(table.rules)), h("td", {}, seated),
    h("td", { class: "commission" }, commission),
    h("td", {}, mine ? (table.gameId ? h("a", { href: `#/game/${table.gameId}` }, "Play")
                                     : "waiting for an opponent")
                     : h("button", { type: "button", onclick: join }, "Join")));
}

export async function lobbyView(go) {
  const list = h("tbody");
  const chat = lobbyChatPanel();
  const show = async (v) => {
    const query = new URLSearchParams();
    if (v.currency) query.set("currency", v.currency);
    if (v.kind) query.set("kind", v.kind);
    if (v.maxStake) query.set("maxStakeMinorUnits", toMinor(v.maxStake));
    const answer = await api.get(`/v1/tables?${query}`);
    await names.load((answer.tables || []).flatMap((t) => (t.players || []).map((p) => p.accountId)));
    const rows = (answer.tables || []).map((t) => tableRow(t, go));
    list.replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 4 }, "No open tables"))]));
  };
  const filters = form("Filter tables", [
    field("Currency", "currency", {}, [["", "Any"], ["USD", "USD"], ["PLAY", "Play money"], ["EUR", "EUR"]]),
    field("Kind", "kind", {}, [["", "Any"], ["PLAY_KIND_MONEY_GAME", "Money game"], ["PLAY_KIND_MATCH", "Match"]]),
    field("Highest stake", "maxStake", { inputmode: "decimal", placeholder: "any" }),
  ], "Show tables", show);
  const view = h("section", { class: "panel" },
    h("h2", {}, "Lobby"),
    h("div", { class: "forms" },
      form("Play now: enter the queue", ruleFields(), "Find an opponent", async (v) => {
        const ticket = await api.post("/v1/queue", { rules: rulesFrom(v), idempotencyKey: key() });
        go(`#/queue/${ticket.ticketId}`);
      }),
      form("Open a table", [...ruleFields(), tableStakesField()], "Open table", async (v) => {
        const table = await api.post("/v1/tables", { rules: rulesFrom(v), idempotencyKey: key() });
        filters.requestSubmit();
        watchTable(table.tableId, go);
        return "Table open: waiting for an opponent";
      })),
    filters,
    h("table", { class: "tables", "aria-label": "Open tables" },
      h("thead", {}, h("tr", {}, h("th", {}, "Table"), h("th", {}, "Seated"),
        h("th", {}, "Your commission"), h("th", {}, ""))),
      list),
    chat,
    h("h3", {}, "Leaderboard"), await leaderboard());
  view.cleanup = () => chat.cleanup();
  await show({});
  return view;
}

// The top players by rating, and the viewer's own place when not among them.
async function leaderboard() {
  const board = await api.get("/v1/leaderboard?limit=20").catch(() => ({}));
  const entries = board.entries || [];
  const own = board.own && board.own.rank && !entries.some((e) => e.accountId === board.own.accountId)
    ? [board.own] : [];
  await names.load([...entries, ...own].map((e) => e.accountId));
  const row = (e) => h("tr", { "data-account": e.accountId,
                               class: e.accountId === api.accountId ? "me" : "" },
    h("td", {}, String(e.rank || "")), h("th", { scope: "row" }, names.label(e.accountId)),
    h("td", {}, e.display || String(Math.round(e.rating || 0))));
  const rows = [...entries, ...own].map(row);
  return h("table", { class: "leaderboard", "aria-label": "Leaderboard" },
    h("thead", {}, h("tr", {}, h("th", {}, "Rank"), h("th", {}, "Player"), h("th", {}, "Rating"))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 3 }, "Nobody is rated yet"))));
}

// The owner of a table waits on the lobby page for someone to sit down.
function watchTable(tableId, go) {
  const poll = async () => {
    if (!location.hash.startsWith("#/lobby")) return;
    const table = await api.get(`/v1/tables/${tableId}`).catch(() => null);
    if (table && table.gameId) go(`#/game/${table.gameId}`);
    else setTimeout(poll, 1000);
  };
  setTimeout(poll, 1000);
}

export function queueView(ticketId, go) {
  const status = h("p", { class: "ticket", "aria-live": "polite" }, "Waiting for the ticket…");
  const controller = new AbortController();
  const show = (ticket) => {
    status.dataset.status = ticket.status;
    const text = [`Ticket: ${enumText(ticket.status, "TICKET_STATUS_")}`];
    if (ticket.rules) text.push(rulesText(ticket.rules));
    if (ticket.commission) text.push(`your commission ${formatMoney(ticket.commission.commissionPerPlayer)}`);
    if (ticket.reason) text.push(ticket.reason);
    status.textContent = text.join(" · ");
    if (ticket.status === "TICKET_STATUS_MATCHED" && ticket.gameId) {
      controller.abort();
      go(`#/game/${ticket.gameId}`);
    }
  };
  const watch = async () => {
    while (!controller.signal.aborted) {
      try {
        await api.stream(`/v1/queue/${ticketId}:watch`, show, { signal: controller.signal });
      } catch (error) {
        if (controller.signal.aborted) return;
        say(error.message);
      }
      // The stream ends when the ticket settles or the connection drops: read it once more.
      const ticket = await api.get(`/v1/queue/${ticketId}`).catch(() => null);
      if (ticket) show(ticket);
      if (!ticket || !["TICKET_STATUS_WAITING", "TICKET_STATUS_SEATING"].includes(ticket.status)) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  };
  watch();
  const leave = async () => {
    controller.abort();
    try {
      show(await api.del(`/v1/queue/${ticketId}`));
    } catch (error) {
      say(error.message);
    }
  };
  const view = h("section", { class: "panel narrow" }, h("h2", {}, "Queue"), status,
    h("button", { type: "button", onclick: leave }, "Leave the queue"));
  view.cleanup = () => controller.abort();
  return view;
}
