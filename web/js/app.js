// The client's entry point: signs the tab back in after a reload (api.restore), then
// routes by the URL's hash, so a reload or a shared link lands on the same page:
// #/login, #/register, #/account, #/lobby, #/queue/<ticket>, #/game/<game>,
// #/tournaments, #/tournament/<tournament>.
import { api } from "/js/api.js";
import { accountView, registerView, signInView } from "/js/account.js";
import { gameView } from "/js/game.js";
import { lobbyView, queueView } from "/js/lobby.js";
import { tournamentView, tournamentsView } from "/js/tournaments.js";
import { h, say } from "/js/ui.js";

const app = document.getElementById("app");
const nav = document.getElementById("nav");
let current = null;

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function drawNav() {
  const links = api.signedIn
    ? [h("a", { href: "#/lobby" }, "Lobby"), h("a", { href: "#/tournaments" }, "Tournaments"),
       h("a", { href: "#/account" }, "Account"),
       h("button", { type: "button", id: "logout", onclick: async () => { await api.logout(); go("#/login"); } },
         "Log out")]
    : [h("a", { href: "#/login" }, "Sign in"), h("a", { href: "#/register" }, "Register")];
  nav.replaceChildren(...links);
}

async function route() {
  if (current && current.cleanup) current.cleanup();
  const [, page = "", id = ""] = (location.hash || "#/").split("/");
  drawNav();
  let view;
  try {
    if (!api.signedIn && page !== "register") view = page === "login" || page === "" ? signInView(go) : (go("#/login"), null);
    else if (page === "register") view = registerView(go);
    else if (page === "account") view = await accountView(go);
    else if (page === "queue" && id) view = queueView(id, go);
    else if (page === "game" && id) view = gameView(id, go);
    else if (page === "tournaments") view = await tournamentsView();
    else if (page === "tournament" && id) view = await tournamentView(decodeURIComponent(id));
    else view = await lobbyView(go);
  } catch (error) {
    view = h("p", { class: "error" }, error.message);
  }
  if (!view) return;
  current = view;
  app.replaceChildren(view);
  say("");
  const heading = view.querySelector && view.querySelector("h2");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus();
  }
}

api.onSignedOut(() => { say("Signed out"); go("#/login"); });
window.addEventListener("hashchange", route);
await api.restore();
route();
