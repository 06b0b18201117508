// Signing in, and the clear refusal for an account without the compliance role.

import * as client from "../client.js";
import { field, h, submitting } from "../dom.js";

export function renderSignIn(main, { signedIn }) {
  const form = h("form", { class: "panel narrow", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title", tabindex: -1 }, "Sign in to the compliance console"),
    h("p", { class: "hint" }, "For accounts with the compliance role."),
    h("div", { class: "field" },
      h("label", { for: "signin-email" }, "Email"),
      h("input", { id: "signin-email", name: "email", type: "email", autocomplete: "username",
        required: true })),
    h("div", { class: "field" },
      h("label", { for: "signin-password" }, "Password"),
      h("input", { id: "signin-password", name: "password", type: "password",
        autocomplete: "current-password", required: true })),
    h("button", { type: "submit" }, "Sign in"));
  main.replaceChildren(submitting(form, async () => {
    await client.signIn(field(form, "email"), form.elements.namedItem("password").value);
    await signedIn();
  }));
}

export function renderRefusal(main, who, { signOut }) {
  main.replaceChildren(h("section", { class: "panel narrow refusal", role: "alert" },
    h("h1", { tabindex: -1 }, "Not a compliance account"),
    h("p", {}, "This console is only for accounts with the compliance role. The account ",
      h("span", { class: "id" }, who ? who.accountId : "you signed in with"),
      " does not have it, so it can see no alerts, profiles or cases."),
    h("p", {}, "An operator grants the role (tavla accounts grant-role); sign in again afterwards."),
    h("button", { type: "button", onclick: signOut }, "Sign out")));
}
