// Sign in, register, and the account page: balances, play money, deposits and
// withdrawals (refused where geo does not allow them: the server's message is shown),
// deposit limits, self-exclusion, rating; the screen name (chosen at registration, or
// once here by an account opened before screen names had rules).
import { api, formatMoney } from "/js/api.js";
import { enumText, field, form, h, key, toMinor } from "/js/ui.js";

export function signInView(go) {
  return h("section", { class: "panel narrow" },
    h("h2", {}, "Sign in"),
    form("Sign in", [
      field("Email", "email", { type: "email", required: true, autocomplete: "username" }),
      field("Password", "password", { type: "password", required: true,
                                       autocomplete: "current-password" }),
    ], "Sign in", async ({ email, password }) => {
      await api.login(email, password);
      go("#/lobby");
    }),
    h("p", {}, "New here? ", h("a", { href: "#/register" }, "Open an account")));
}

export function registerView(go) {
  return h("section", { class: "panel narrow" },
    h("h2", {}, "Open an account"),
    form("Register", [
      field("Email", "email", { type: "email", required: true, autocomplete: "email" }),
      field("Password", "password", { type: "password", required: true, minlength: 8,
                                       autocomplete: "new-password" }),
      field("Display name (your screen name: 3 to 20 letters, digits, _ or -)", "displayName",
            { required: true, minlength: 3, maxlength: 20, autocomplete: "nickname" }),
      field("Residence (ISO 3166 code: MT, GB, US-NJ)", "residence",
            { required: true, pattern: "[A-Za-z]{2}(-[A-Za-z0-9]{1,3})?", autocomplete: "country" }),
      field("Date of birth", "dateOfBirth", { type: "date", required: true, autocomplete: "bday" }),
    ], "Register", async (v) => {
      await api.register({ ...v, residence: v.residence.toUpperCase() });
      await api.login(v.email, v.password);
      go("#/account");
    }));
}

async function balancesList() {
  const answer = await api.get("/v1/wallet/balances");
  const rows = (answer.balances || []).map((b) => h("tr", { "data-currency": b.currency },
    h("th", { scope: "row" }, b.currency),
    h("td", { class: "available" }, formatMoney(b.available)),
    h("td", { class: "held" }, formatMoney(b.held))));
  return h("div", {},
    answer.frozen ? h("p", { class: "error" }, "Your wallet is frozen: no play, no withdrawals.") : null,
    h("table", { class: "balances", "aria-label": "Balances" },
      h("thead", {}, h("tr", {}, h("th", {}, "Currency"), h("th", {}, "Available"), h("th", {}, "Held"))),
      h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 3 }, "No money yet")))));
}

async function limitsList() {
  const answer = await api.get("/v1/wallet/deposit-limits");
  const items = (answer.limits || []).map((l) => h("li", {},
    `${enumText(l.period, "LIMIT_PERIOD_")}: ${l.current ? formatMoney(l.current) : "no limit"}`,
    l.used ? `, used ${formatMoney(l.used)}` : "",
    l.pending ? `; ${formatMoney(l.pending)} from ${new Date(l.pendingEffectiveAt).toLocaleString()}` : ""));
  return h("ul", { class: "limits", "aria-label": "Deposit limits" },
    items.length ? items : h("li", {}, "No deposit limits set"));
}

export async function accountView(go) {
  const account = await api.get(`/v1/accounts/${api.accountId}`);
  const rating = await api.get(`/v1/ratings/${api.accountId}`).catch(() => null);
  const balances = h("div", { id: "balances" }, await balancesList());
  const limits = h("div", { id: "limits" }, await limitsList());
  const refresh = async () => {
    balances.replaceChildren(await balancesList());
    limits.replaceChildren(await limitsList());
  };
  // After a pending payment: once a second (ten times at most) until the provider's
  // answer shows in the balances, and only while this view is on the page.
  const untilSettled = (before, tries = 10) => setTimeout(async () => {
    if (!balances.isConnected) return;
    await refresh().catch(() => null);
    if (balances.textContent === before && tries > 1) untilSettled(before, tries - 1);
  }, 1000);
  const money = (name) => [
    field("Amount", "amount", { inputmode: "decimal", required: true, placeholder: "10.00" }),
    field("Currency", "currency", {}, [["USD", "USD"], ["EUR", "EUR"], ["GBP", "GBP"]]),
  ].map((f) => { f.dataset.for = name; return f; });
  const payment = (path, methodField) => async (v) => {
    const done = await api.post(path, {
      amount: { minorUnits: toMinor(v.amount), currency: v.currency },
      idempotencyKey: key(), [methodField]: "sandbox",
    });
    await refresh();
    // The provider confirms a moment later: show the balance once it has.
    if (done.status === "PAYMENT_STATUS_PENDING") untilSettled(balances.textContent);
    return `${enumText(done.status, "PAYMENT_STATUS_")}: ${formatMoney(done.amount)}` +
      (done.failureReason ? ` (${done.failureReason})` : "");
  };
  return h("section", { class: "panel" },
    h("h2", {}, account.screenName || account.displayName),
    account.screenName ? null : form("Choose your screen name (once)", [
      field("Screen name (3 to 20 letters, digits, _ or -)", "screenName",
            { required: true, minlength: 3, maxlength: 20, autocomplete: "nickname" }),
    ], "Choose", async (v) => {
      await api.post(`/v1/accounts/${api.accountId}:setScreenName`,
                     { accountId: api.accountId, screenName: v.screenName });
      go("#/account");
      return "Screen name chosen";
    }),
    h("p", { class: "who" }, `${account.email} · residence ${account.residence} · `,
      h("span", { id: "rating" }, rating ? `rating ${rating.display}` : "not rated yet"),
      ` · ${enumText(account.status, "ACCOUNT_STATUS_")}`),
    account.selfExcludedUntil ? h("p", { class: "error" },
      `Self-excluded until ${new Date(account.selfExcludedUntil).toLocaleString()}`) : null,
    h("h3", {}, "Balances"), balances,
    h("div", { class: "forms" },
      form("Play money", [], "Top up play money", async () => {
        const done = await api.post("/v1/wallet/play-money:topUp", { idempotencyKey: key() });
        await refresh();
        return `Added ${formatMoney(done.credited)}`;
      }),
      form("Deposit", money("deposit"), "Deposit", payment("/v1/wallet/deposits", "paymentMethod")),
      form("Withdraw", money("withdraw"), "Withdraw", payment("/v1/wallet/withdrawals", "payoutMethod")),
      h("div", {}, h("h3", {}, "Deposit limits"), limits,
        form("Set a deposit limit", [
          field("Period", "period", {}, [["LIMIT_PERIOD_DAY", "Day"], ["LIMIT_PERIOD_WEEK", "Week"],
                                         ["LIMIT_PERIOD_MONTH", "Month"]]),
          ...money("limit"),
        ], "Set limit", async (v) => {
          await api.post("/v1/wallet/deposit-limits", {
            period: v.period, limit: { minorUnits: toMinor(v.amount), currency: v.currency } });
          await refresh();
          return "Limit saved (a higher limit takes effect after 24 hours)";
        })),
      form("Take a break (self-exclusion)", [
        field("Until", "until", { type: "date", required: true }),
      ], "Self-exclude", async (v) => {
        if (!confirm(`Exclude yourself until ${v.until}? It cannot be shortened.`)) return "";
        const until = new Date(`${v.until}T00:00:00Z`).toISOString();
        await api.post(`/v1/accounts/${api.accountId}:selfExclude`, { accountId: api.accountId, until });
        go("#/account");
        return "Self-excluded";
      })));
}
