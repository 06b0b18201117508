// A game at the table: the board, the dice, the cube, pip counts, clocks and score, the
// decisions of the phase (roll, double, take, drop, beaver, resign at a level, accept
// or reject), the play built on the board from the legal plays and confirmed at once,
// and table chat. State comes from WatchGame (a server stream over REST), resumed after
// a dropped connection; a reload lands here again (the URL names the game) and calls
// Reconnect. Heartbeats keep the seat present while the page is open. At a table-stakes
// table (tablestakes.js): each player's stake left and the game's cube cap, the double
// disabled past the cap with the reason, leaving after the game in play (LeaveTable), and
// once a game is over the session's next game followed (the table's latest game id,
// GetTable) or the session's end shown.
import { api } from "/js/api.js";
import { names } from "/js/names.js";
import { renderBoard } from "/js/board.js";
import { PlayBuilder } from "/js/moves.js";
import { decodePositionId } from "/js/position.js";
import { reviewView } from "/js/review.js";
import {
  bringIn, capText, doubleRefusal, leavingText, mayLeave, sessionAfter, stakesLeft,
} from "/js/tablestakes.js";
import { enumText, h, say } from "/js/ui.js";

const HEARTBEAT_MS = 5000;

function seconds(duration) {
  return duration ? parseFloat(duration) : 0;
}

function clockText(player, now) {
  const clock = player.clock || {};
  if (clock.expiresAt) {
    const left = Math.max(0, (Date.parse(clock.expiresAt) - now) / 1000);
    const delay = clock.delayEndsAt ? Math.max(0, (Date.parse(clock.delayEndsAt) - now) / 1000) : 0;
    return delay > 0 ? `delay ${delay.toFixed(0)} s, then ${(left - delay).toFixed(0)} s`
                     : `${left.toFixed(0)} s`;
  }
  return `${seconds(clock.reserveLeft).toFixed(0)} s`;
}

export function gameView(gameId, go = (hash) => { location.hash = hash; }) {
  const controller = new AbortController();
  let game = null;
  let builder = null;
  let builtFor = -1;
  let chatSeq = 0;

  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "board");
  svg.setAttribute("role", "group");
  svg.setAttribute("aria-label", "Backgammon board");
  const players = h("div", { class: "players" });
  const info = h("p", { class: "phase", "aria-live": "polite", id: "phase" });
  const actions = h("div", { class: "actions", role: "toolbar", "aria-label": "Game actions" });
  const chatLog = h("ol", { class: "chat", "aria-label": "Table chat", "aria-live": "polite" });
  const chatInput = h("input", { id: "chat-text", name: "text", maxlength: 280, autocomplete: "off" });
  const chatForm = h("form", { class: "chatform", "aria-label": "Send a chat message" },
    h("label", { for: "chat-text" }, "Message"), chatInput, h("button", { type: "submit" }, "Send"));
  const review = h("div", { class: "review" });
  // Table stakes: each player's stake left, this game's cube cap, the session's end.
  const stakes = h("p", { class: "stakes", "aria-label": "Table stakes" });
  const leave = h("div", { class: "leave" });
  const session = h("p", { class: "session", role: "status", "aria-live": "polite" });

  const me = () => game.players.find((p) => p.accountId === api.accountId);
  const them = () => game.players.find((p) => p.accountId !== api.accountId);
  const mineToAct = () => game.awaitingAccountId === api.accountId &&
    game.status === "GAME_STATUS_IN_PROGRESS";

  const act = async (verb, body = {}) => {
    try {
      accept(await api.post(`/v1/games/${gameId}:${verb}`, { expectedVersion: game.version, ...body }));
    } catch (error) {
      say(error.message);
      info.textContent = error.message;
    }
  };

  const sides = () => {
    const { onRoll, other } = decodePositionId(game.positionId);
    const meOnRoll = game.playerOnRollAccountId === api.accountId;
    return meOnRoll ? [onRoll, other] : [other, onRoll];
  };

  function drawBoard() {
    const [mine, theirs] = sides();
    const moving = mineToAct() && game.phase === "TURN_PHASE_MOVE";
    if (moving && builtFor !== game.version) {
      const plays = (game.legalPlays || []).map((p) => ({
        ...p, steps: (p.steps || []).map((s) => ({ fromPoint: s.fromPoint || 0, toPoint: s.toPoint || 0 })),
      }));
      builder = new PlayBuilder(plays, mine, theirs);
      builtFor = game.version;
    }
    if (!moving) builder = null;
    const position = builder ? builder.position : { mine, theirs };
    const owner = !game.cubeOwnerAccountId ? "" : game.cubeOwnerAccountId === api.accountId ? "me" : "them";
    renderBoard(svg, {
      ...position, dice: game.dice, cube: { value: game.cubeValue || 1, owner },
      selected: builder ? builder.selected : null,
      targets: builder ? builder.targets() : new Set(),
      movable: builder ? builder.movable() : new Set(),
    }, builder ? press : null);
  }

  // The board is redrawn after each press: keep the keyboard where the play goes on
  // (the first landing point once a checker is picked, else the next checker, else
  // the Confirm button).
  function press(point) {
    builder.press(point);
    drawBoard();
    drawActions();
    const next = svg.querySelector(builder.selected !== null ? ".spot.target" : ".spot.movable") ||
      document.getElementById("confirm");
    if (next) next.focus();
  }

  function drawPlayers() {
    const now = Date.now();
    players.replaceChildren(...game.players.map((p) => h("div", {
      class: `player${p.accountId === api.accountId ? " me" : ""}${p.accountId === game.awaitingAccountId ? " awaiting" : ""}`,
      "data-account": p.accountId },
      h("strong", { class: "name" },
        p.accountId === api.accountId ? `${names.label(p.accountId)} (you)` : names.label(p.accountId)),
      h("span", {}, ` rating ${Math.round(p.rating)}`),
      h("span", { class: "pips" }, ` · pips ${p.pipCount}`),
      game.rules.kind === "PLAY_KIND_MATCH" ? h("span", { class: "score" }, ` · score ${p.score}/${game.rules.matchLength}`) : null,
      h("span", { class: "clock" }, ` · clock ${clockText(p, now)}`),
      p.connected ? null : h("span", { class: "away" }, " · disconnected"))));
  }

  function drawActions() {
    const buttons = [];
    const button = (text, onclick, attrs = {}) =>
      buttons.push(h("button", { type: "button", onclick, ...attrs }, text));
    const mineNow = mineToAct();
    if (game.status !== "GAME_STATUS_IN_PROGRESS") {
      actions.replaceChildren();
      return;
    }
    if (mineNow && game.phase === "TURN_PHASE_ROLL_OR_DOUBLE") {
      button("Roll", () => act("roll"));
      const refusal = doubleRefusal(game);
      button("Double", () => act("double"), { disabled: Boolean(refusal), title: refusal || null,
                                              "aria-describedby": refusal ? "double-refused" : null });
      if (refusal) buttons.push(h("span", { class: "refused", id: "double-refused" }, refusal));
    }
    if (mineNow && game.phase === "TURN_PHASE_MOVE" && builder) {
      const play = builder.complete();
      button("Undo", () => { builder.undo(); drawBoard(); drawActions(); },
             { disabled: builder.made.length === 0 });
      button(play ? `Confirm ${play.notation || "(no move)"}` : "Confirm play",
             () => act("move", { notation: play.notation }), { disabled: !play, id: "confirm" });
    }
    if (mineNow && game.phase === "TURN_PHASE_CUBE_RESPONSE") {
      button("Take", () => act("take"));
      button("Drop", () => act("drop"));
      if (game.rules.beaver) button("Beaver", () => act("beaver"));
    }
    if (mineNow && game.phase === "TURN_PHASE_RESIGN_RESPONSE") {
      button("Accept resignation", () => act("acceptResign"));
      button("Reject resignation", () => act("rejectResign"));
    }
    const level = h("select", { id: "resign-level", "aria-label": "Resign at" },
      h("option", { value: "RESULT_TYPE_SINGLE" }, "single game"),
      h("option", { value: "RESULT_TYPE_GAMMON" }, "gammon"),
      h("option", { value: "RESULT_TYPE_BACKGAMMON" }, "backgammon"));
    if (game.phase !== "TURN_PHASE_RESIGN_RESPONSE") {
      buttons.push(h("span", { class: "resign" }, level,
        h("button", { type: "button", onclick: () => act("resign", { level: level.value }) }, "Resign")));
    }
    actions.replaceChildren(...buttons);
  }

  function describe() {
    if (game.status === "GAME_STATUS_FINISHED") {
      const won = game.winnerAccountId === api.accountId;
      const outcome = game.lastOutcome || {};
      return `${won ? "You won" : "You lost"}: ${enumText(outcome.result, "RESULT_TYPE_")}` +
        ` (${enumText(outcome.reason, "END_REASON_")}), cube ${outcome.cubeValue || game.cubeValue}`;
    }
    if (game.status === "GAME_STATUS_CANCELLED") return "The game was cancelled.";
    const who = mineToAct() ? "Your" : `${names.label(them().accountId)}'s`;
    const phase = enumText(game.phase, "TURN_PHASE_");
    let text = `${who} turn: ${phase}`;
    if (game.dice && game.dice.length) text += ` · dice ${game.dice.join("-")}`;
    if (game.pendingResign && game.phase === "TURN_PHASE_RESIGN_RESPONSE") {
      text += ` · resignation offered: ${enumText(game.pendingResign.level, "RESULT_TYPE_")}`;
    }
    if (game.crawfordGame) text += " · Crawford game";
    return text;
  }

  function accept(next) {
    if (!next || (game && Number(next.version) < Number(game.version))) return;
    game = next;
    info.textContent = describe();
    info.dataset.phase = game.phase;
    info.dataset.status = game.status;
    info.dataset.version = game.version;
    info.dataset.awaiting = game.awaitingAccountId === api.accountId ? "me" : "them";
    drawPlayers();
    const unnamed = game.players.filter((p) => !names.known.has(p.accountId));
    if (unnamed.length) {
      names.load(unnamed.map((p) => p.accountId)).then(() => {
        drawPlayers();
        info.textContent = describe();
      });
    }
    drawBoard();
    drawActions();
    if (game.status !== "GAME_STATUS_IN_PROGRESS" && !review.dataset.shown) {
      review.dataset.shown = "1";
      review.replaceChildren(reviewView(game));
      if (bringIn(game.rules)) followSession();
    }
  }

  // The table as matchmaking shows it: each player's stake left (after the last settled
  // game) and this game's cube cap.
  async function showStakes() {
    const table = await api.get(`/v1/tables/${game.tableId}`);
    await names.load((table.players || []).map((p) => p.accountId));
    const left = stakesLeft(table).map((s) => `${names.label(s.accountId)} ${s.text}`);
    const label = (id) => names.label(id);
    stakes.textContent = [`Stakes left: ${left.join(", ")}`, capText(game), leavingText(table, label)]
      .filter(Boolean).join(" · ");
    leave.replaceChildren(...(mayLeave(table, api.accountId)
      ? [h("button", { type: "button", onclick: leaveAfterThisGame }, "Leave the table after this game")]
      : []));
    return table;
  }

  // No further game starts; this one is played out (or resigned) and settled first.
  async function leaveAfterThisGame() {
    try {
      await api.post(`/v1/tables/${game.tableId}:leave`, {});
      await showStakes();
    } catch (error) {
      say(error.message);
    }
  }

  // A table-stakes game is over: once the wallet settled it, the table either started the
  // session's next game (followed at once) or closed (the session's end is shown).
  async function followSession() {
    while (!controller.signal.aborted) {
      const table = await showStakes().catch(() => null);
      const after = table && sessionAfter(table, gameId, (id) => names.label(id));
      if (after && after.next) return go(`#/game/${after.next}`);
      if (after && after.ended) {
        session.textContent = after.ended;
        session.dataset.ended = "1";
        return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  function addChat(chat) {
    chatSeq = Math.max(chatSeq, Number(chat.seq || 0));
    const by = h("strong", {}, `${names.label(chat.accountId) || chat.displayName}: `);
    chatLog.append(h("li", {}, by, chat.text));
    names.nameOf(chat.accountId).then((name) => { if (name) by.textContent = `${name}: `; });
    chatLog.scrollTop = chatLog.scrollHeight;
  }

  chatForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = chatInput.value.trim();
    if (!text) return;
    try {
      await api.post(`/v1/games/${gameId}/chat`, { text });
      chatInput.value = "";
    } catch (error) {
      say(error.message);
      info.textContent = error.message;
    }
  });

  async function watch() {
    while (!controller.signal.aborted) {
      try {
        const since = game ? `&sinceVersion=${game.version}` : "";
        await api.stream(`/v1/games/${gameId}:watch?sinceChatSeq=${chatSeq}${since}`, (update) => {
          if (update.chat) addChat(update.chat);
          if (update.game) accept(update.game);
        }, { signal: controller.signal });
      } catch (error) {
        if (controller.signal.aborted) return;
        say(`Connection lost, reconnecting: ${error.message}`);
      }
      if (game && game.status !== "GAME_STATUS_IN_PROGRESS") return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  async function start() {
    // After a reload or a dropped connection: back in the seat, then the state.
    await api.post(`/v1/games/${gameId}:reconnect`, {}).catch(() => null);
    try {
      accept(await api.get(`/v1/games/${gameId}`));
    } catch (error) {
      info.textContent = error.message;
      return;
    }
    if (bringIn(game.rules)) showStakes().catch((error) => say(error.message));
    watch();
    const beat = setInterval(() => {
      if (controller.signal.aborted || game.status !== "GAME_STATUS_IN_PROGRESS") {
        clearInterval(beat);
        return;
      }
      api.post(`/v1/games/${gameId}:heartbeat`, {}).catch(() => null);
    }, HEARTBEAT_MS);
    const tick = setInterval(() => {
      if (controller.signal.aborted) clearInterval(tick);
      else if (game) drawPlayers();
    }, 1000);
  }
  start();

  const view = h("section", { class: "panel game", "data-game": gameId },
    h("h2", {}, "Table"), players, stakes, leave, session, svg, info, actions,
    h("details", { class: "chatbox", open: true }, h("summary", {}, "Chat"), chatLog, chatForm),
    review);
  view.cleanup = () => controller.abort();
  return view;
}
