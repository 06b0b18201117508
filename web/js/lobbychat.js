// Lobby chat: one room per currency (GET /v1/lobby/rooms), its messages on the server
// stream WatchLobbyChat over REST (GET /v1/lobby/rooms/{room}:watch), resumed after the
// last seq seen when the connection drops, and a form that posts as the signed-in
// player (POST /v1/lobby/rooms/{room}/messages). Senders are shown by their screen names
// (names.js), as text. A message moderation refuses is not shown to anyone: its reason
// is said on the form's message line. Beside another player's line, a Mute button mutes
// them for this player in every room, kept by the server across sessions
// (POST /v1/lobby/chat:mute): their lines go from the log and the server sends no more;
// the "Muted" list (GET /v1/lobby/mutes) unmutes, and the room is read again from the
// start so their lines come back.
import { api } from "/js/api.js";
import { names } from "/js/names.js";
import { h } from "/js/ui.js";

const RECONNECT_MS = 1000;
const SHOWN = 200;  // messages kept on screen

export function lobbyChatPanel({ client = api, book = names } = {}) {
  let controller = new AbortController();
  let room = "";
  let seq = 0;
  const muted = new Map();  // account id -> the screen name the server gave ("" for none)

  const rooms = h("select", { id: "lobby-room", name: "room" });
  const log = h("ol", { class: "chat lobby-chat", "aria-label": "Lobby chat", "aria-live": "polite" });
  const input = h("input", { id: "lobby-chat-text", name: "text", maxlength: 280, autocomplete: "off" });
  const message = h("p", { class: "message", role: "alert", "aria-live": "assertive" });
  const mutedList = h("ul", { class: "muted-players", "aria-label": "Muted players" });
  const chatForm = h("form", { class: "chatform", "aria-label": "Send a message to the lobby" },
    h("label", { for: "lobby-chat-text" }, "Message"), input, h("button", { type: "submit" }, "Send"));

  function fail(error) {
    message.textContent = error.message;
    message.classList.add("error");
  }

  function showMuted() {
    mutedList.replaceChildren(...[...muted].map(([accountId, name]) => {
      const shown = name || book.label(accountId);
      const unmute = h("button", { type: "button", "aria-label": `Unmute ${shown}` }, "Unmute");
      unmute.addEventListener("click", () => setMute(accountId, false));
      return h("li", { "data-account": accountId }, `${shown} `, unmute);
    }));
  }

  async function setMute(accountId, mute) {
    message.textContent = "";
    message.className = "message";
    try {
      const answer = await client.post("/v1/lobby/chat:mute", { accountId, muted: mute });
      if (mute) {
        muted.set(accountId, answer.screenName || "");
        for (const line of [...log.children]) {
          if (line.dataset.account === accountId) line.remove();
        }
      } else {
        muted.delete(accountId);
        if (room) enter(room);  // read the room again: their lines come back
      }
      showMuted();
    } catch (error) {
      fail(error);
    }
  }

  function add(posted) {
    if (posted.room !== room || Number(posted.seq || 0) <= seq) return;  // another room, or seen
    seq = Number(posted.seq);
    if (muted.has(posted.accountId)) return;  // sent before the server had the mute
    const by = h("strong", {}, `${book.label(posted.accountId)}: `);
    const line = h("li", { "data-seq": String(seq), "data-account": posted.accountId }, by, posted.text);
    if (posted.accountId !== client.accountId) {
      const mute = h("button", { type: "button", class: "mute",
                                 "aria-label": `Mute ${book.label(posted.accountId)}` }, "Mute");
      mute.addEventListener("click", () => setMute(posted.accountId, true));
      book.nameOf(posted.accountId).then((name) => {
        if (name) mute.setAttribute("aria-label", `Mute ${name}`);
      });
      line.append(" ", mute);
    }
    log.append(line);
    book.nameOf(posted.accountId).then((name) => { if (name) by.textContent = `${name}: `; });
    while (log.children.length > SHOWN) log.firstElementChild.remove();
    log.scrollTop = log.scrollHeight;
  }

  async function watch(signal, watched) {
    while (!signal.aborted) {
      try {
        await client.stream(`/v1/lobby/rooms/${encodeURIComponent(watched)}:watch?sinceSeq=${seq}`,
                            add, { signal });
      } catch (error) {
        if (signal.aborted) return;
        message.textContent = `Chat connection lost, reconnecting: ${error.message}`;
      }
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }

  function enter(chosen) {
    controller.abort();
    controller = new AbortController();
    room = chosen;
    seq = 0;
    log.replaceChildren();
    message.textContent = "";
    watch(controller.signal, chosen);
  }

  rooms.addEventListener("change", () => enter(rooms.value));
  chatForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text || !room) return;
    message.textContent = "";
    message.className = "message";
    try {
      await client.post(`/v1/lobby/rooms/${encodeURIComponent(room)}/messages`, { text });
      input.value = "";
    } catch (error) {
      fail(error);
    }
  });

  async function start() {
    try {
      const mutes = await client.get("/v1/lobby/mutes");
      for (const m of mutes.mutes || []) muted.set(m.accountId, m.screenName || "");
      showMuted();
    } catch (error) {
      message.textContent = `Muted players not loaded: ${error.message}`;
    }
    try {
      const answer = await client.get("/v1/lobby/rooms");
      const listed = answer.rooms || [];
      rooms.replaceChildren(...listed.map((r) => h("option", { value: r.room }, r.title || r.room)));
      if (listed.length) enter(listed[0].room);
    } catch (error) {
      message.textContent = error.message;
    }
  }
  start();

  const panel = h("section", { class: "lobby-chatbox", "aria-label": "Lobby chat" },
    h("h3", {}, "Lobby chat"),
    h("div", { class: "field" }, h("label", { for: "lobby-room" }, "Room"), rooms),
    log, chatForm, message, h("h4", {}, "Muted"), mutedList);
  panel.cleanup = () => controller.abort();
  return panel;
}
