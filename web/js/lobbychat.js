// Lobby chat: one room per currency (GET /v1/lobby/rooms), its messages on the server
// stream WatchLobbyChat over REST (GET /v1/lobby/rooms/{room}:watch), resumed after the
// last seq seen when the connection drops, and a form that posts as the signed-in
// player (POST /v1/lobby/rooms/{room}/messages). Senders are shown by their screen names
// (names.js), as text. A message moderation refuses is not shown to anyone: its reason
// is said on the form's message line.
import { api } from "/js/api.js";
import { names } from "/js/names.js";
import { h } from "/js/ui.js";

const RECONNECT_MS = 1000;
const SHOWN = 200;  // messages kept on screen

export function lobbyChatPanel({ client = api, book = names } = {}) {
  let controller = new AbortController();
  let room = "";
  let seq = 0;

  const rooms = h("select", { id: "lobby-room", name: "room" });
  const log = h("ol", { class: "chat lobby-chat", "aria-label": "Lobby chat", "aria-live": "polite" });
  const input = h("input", { id: "lobby-chat-text", name: "text", maxlength: 280, autocomplete: "off" });
  const message = h("p", { class: "message", role: "alert", "aria-live": "assertive" });
  const chatForm = h("form", { class: "chatform", "aria-label": "Send a message to the lobby" },
    h("label", { for: "lobby-chat-text" }, "Message"), input, h("button", { type: "submit" }, "Send"));

  function add(posted) {
    if (posted.room !== room || Number(posted.seq || 0) <= seq) return;  // another room, or seen
    seq = Number(posted.seq);
    const by = h("strong", {}, `${book.label(posted.accountId)}: `);
    log.append(h("li", { "data-seq": String(seq), "data-account": posted.accountId }, by, posted.text));
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
      message.textContent = error.message;
      message.classList.add("error");
    }
  });

  async function start() {
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
    log, chatForm, message);
  panel.cleanup = () => controller.abort();
  return panel;
}
