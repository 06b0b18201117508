// The compliance console: sign-in, the role check, and the hash routes of its views
// (#/alerts, #/alerts/<id>, #/accounts/<id>, #/cases, #/cases/<id>). Each view renders
// into <main> and takes the keyboard focus to its heading.

import * as client from "./client.js";
import { announce, h } from "./dom.js";
import * as account from "./views/account.js";
import * as alertView from "./views/alert.js";
import * as alerts from "./views/alerts.js";
import * as caseView from "./views/case.js";
import * as cases from "./views/cases.js";
import { renderRefusal, renderSignIn } from "./views/signin.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const whoami = document.getElementById("whoami");

const ROUTES = [
  [/^#\/alerts\/([^/?]+)$/, alertView, "Alert"],
  [/^#\/alerts(?:\?(.*))?$/, alerts, "Alerts"],
  [/^#\/accounts\/([^/?]+)$/, account, "Risk profile"],
  [/^#\/cases\/([^/?]+)$/, caseView, "Case"],
  [/^#\/cases(?:\?(.*))?$/, cases, "Cases"],
];

// Each navigation's number: a slow answer for a page the officer already left is dropped.
let current = 0;
// What the last action said, for the view it navigated to.
let pending = "";

function route(hash) {
  for (const [pattern, view, title] of ROUTES) {
    const match = pattern.exec(hash);
    if (!match) continue;
    const isList = view === alerts || view === cases;
    const argument = isList ? new URLSearchParams(match[1] || "")
      : [decodeURIComponent(match[1])];
    return { view, title, argument };
  }
  return null;
}

function showNav(signedIn) {
  nav.hidden = !signedIn;
  for (const link of nav.querySelectorAll("a[data-section]")) {
    const here = location.hash.startsWith(`#/${link.dataset.section}`);
    if (here) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function signOut() {
  try {
    await client.signOut();
  } finally {
    whoami.textContent = "";
    location.hash = "#/alerts";
    await show();
  }
}

function isRefusal(error) {
  return error && (error.code === 7 || error.status === 403);
}

function isSignedOut(error) {
  return error && (error.code === 16 || error.status === 401);
}

async function show(message) {
  const mine = ++current;
  const who = await client.officer();
  if (mine !== current) return;
  if (!who) {
    showNav(false);
    renderSignIn(main, { signedIn: () => show() });
    main.querySelector("h1")?.focus();
    return;
  }
  whoami.textContent = `Signed in as ${who.accountId}`;
  if (!client.isOfficer(who)) {
    showNav(false);
    renderRefusal(main, who, { signOut });
    main.querySelector("h1")?.focus();
    return;
  }
  const found = route(location.hash);
  if (!found) {
    location.replace("#/alerts");
    return;
  }
  showNav(true);
  document.title = `${found.title} · Tavla compliance`;
  main.setAttribute("aria-busy", "true");
  const context = {
    me: who.accountId,
    // The next view says what the action did (it clears the status line otherwise).
    navigate: (hash, said) => { pending = said || ""; location.hash = hash; },
    refresh: (said) => show(said),
  };
  try {
    const staging = document.createElement("div");
    await found.view.render(staging, found.argument, context);
    if (mine !== current) return;
    main.replaceChildren(...staging.childNodes);
    announce(message || pending);
    pending = "";
    main.querySelector("h1")?.focus();
  } catch (error) {
    if (mine !== current) return;
    if (isRefusal(error)) {
      showNav(false);
      renderRefusal(main, who, { signOut });
    } else if (isSignedOut(error)) {
      await client.signOut().catch(() => {});
      renderSignIn(main, { signedIn: () => show() });
      announce("Your session ended; sign in again.", { error: true });
    } else {
      main.replaceChildren(h("h1", { tabindex: -1 }, "Something went wrong"),
        h("p", { role: "alert", class: "problem" }, error.message || String(error)),
        h("p", {}, h("a", { href: "#/alerts" }, "Back to the alerts")));
    }
    main.querySelector("h1")?.focus();
  } finally {
    if (mine === current) main.removeAttribute("aria-busy");
  }
}

document.getElementById("signout").addEventListener("click", signOut);
// A refresh the server refused (session ended, account suspended): back to sign-in.
client.onSignedOut(() => {
  whoami.textContent = "";
  announce("You are signed out.");
  show();
});
window.addEventListener("hashchange", () => show());
show();
