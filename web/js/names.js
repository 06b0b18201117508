// Screen names for account ids, as players are shown everywhere (tables, lobby,
// leaderboard, the compliance console): looked up with GET /v1/screen-names
// (AccountsService.GetScreenNames). The ids asked for in one turn of the event loop go
// in one call (at most 100 ids a call), each answer is kept for the tab's life, and a
// failed lookup is asked again next time. An account without a chosen screen name (one
// opened before screen names had rules) is shown by the start of its id.
import { api } from "/js/api.js";

export const MAX_PER_CALL = 100;
const ACCOUNT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** What shows an account that has no screen name: the start of its id. */
export const shortId = (accountId) => String(accountId || "").slice(0, 8);

export class ScreenNames {
  constructor(client) {
    this.client = client;
    this.known = new Map();  // account id -> screen name, or null for none
    this.pending = new Map();  // account id -> [resolve, ...] until the next lookup
    this.scheduled = false;
  }

  /** The account's screen name, or null when it has none (or the lookup failed). */
  nameOf(accountId) {
    if (this.known.has(accountId)) return Promise.resolve(this.known.get(accountId));
    if (!ACCOUNT_ID.test(accountId || "")) return Promise.resolve(null);  // not an account
    return new Promise((resolve) => {
      const waiting = this.pending.get(accountId) || [];
      waiting.push(resolve);
      this.pending.set(accountId, waiting);
      if (!this.scheduled) {
        this.scheduled = true;
        setTimeout(() => this.lookUp(), 0);
      }
    });
  }

  /** Look up every id in `accountIds` not known yet; resolves when all are answered. */
  load(accountIds) {
    return Promise.all([...new Set(accountIds)].map((id) => this.nameOf(id)));
  }

  /** How to show the account now: its screen name if known, else the start of its id. */
  label(accountId) {
    return this.known.get(accountId) || shortId(accountId);
  }

  async lookUp() {
    this.scheduled = false;
    const batch = [...this.pending];
    this.pending = new Map();
    for (let start = 0; start < batch.length; start += MAX_PER_CALL) {
      const part = batch.slice(start, start + MAX_PER_CALL);
      const found = new Map();
      try {
        const query = new URLSearchParams(part.map(([id]) => ["accountIds", id]));
        const answer = await this.client.get(`/v1/screen-names?${query}`);
        for (const entry of answer.names || []) found.set(entry.accountId, entry.screenName);
        for (const [id] of part) this.known.set(id, found.get(id) || null);
      } catch {
        // Shown by id this time; asked again the next time it is wanted.
      }
      for (const [id, waiting] of part) for (const resolve of waiting) resolve(found.get(id) || null);
    }
  }
}

export const names = new ScreenNames(api);
