// The REST client every page uses: the gateway's public API (see /openapi.json), with
// a real app's session handling.
//
// - The access token (15 minutes) lives in memory only: a script injected elsewhere
//   cannot read it from storage, and a reload does not need it.
// - The refresh token lives in sessionStorage (this tab only, gone when the tab
//   closes), so a reload signs the tab back in with one refresh. It is rotated on
//   every refresh; the server ends the whole session if a spent one is presented
//   again, so refreshes are single-flight: concurrent 401s share one refresh.
// - A call refreshes first when the access token is within a minute of expiry, and
//   once more on a 401 (the clock of this machine may be off); a failed refresh signs
//   the tab out and tells listeners (`onSignedOut`).
// - Logout spends the refresh token at the server and forgets both tokens.
// - Every call carries `x-tavla-device-id`, this browser's installation id (localStorage),
//   which the platform records per session.
//
// Errors: every non-2xx answer is thrown as ApiError with the platform's one error
// shape ({code, message, details}): `message` is meant for a person.

const REFRESH_KEY = "tavla.refresh";
const ACCOUNT_KEY = "tavla.account";
const DEVICE_KEY = "tavla.device";
const EARLY_REFRESH_MS = 60_000;

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.code = body && Number.isInteger(body.code) ? body.code : 2;
    this.details = (body && body.details) || [];
  }
}

// A random UUID (v4); crypto.randomUUID exists only on https and localhost pages.
export function randomId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function deviceId(storage) {
  let id = storage.getItem(DEVICE_KEY);
  if (!id) {
    id = randomId();
    storage.setItem(DEVICE_KEY, id);
  }
  return id;
}

async function errorOf(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = { code: 2, message: `${response.status} ${response.statusText}`, details: [] };
  }
  return new ApiError(response.status, body);
}

export class Api {
  constructor({ base = "", fetchImpl = (...a) => fetch(...a),
                session = sessionStorage, local = localStorage, now = () => Date.now() } = {}) {
    this.base = base;
    this.fetch = fetchImpl;
    this.session = session;
    this.now = now;
    this.device = deviceId(local);
    this.accessToken = null;
    this.expiresAt = 0;
    this.accountId = session.getItem(ACCOUNT_KEY);
    this.refreshing = null;
    this.listeners = new Set();
  }

  get signedIn() {
    return this.accessToken !== null || this.session.getItem(REFRESH_KEY) !== null;
  }

  onSignedOut(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // --- session -------------------------------------------------------------

  async register({ email, password, displayName, residence, dateOfBirth }) {
    return this.call("POST", "/v1/accounts", {
      email, password, displayName, residence, dateOfBirth,
    }, { anonymous: true });
  }

  async login(email, password) {
    const answer = await this.call("POST", "/v1/sessions", { email, password },
                                   { anonymous: true });
    this.keep(answer);
    return answer.accountId;
  }

  // After a reload: a new access token from the tab's refresh token, if it has one.
  async restore() {
    if (this.session.getItem(REFRESH_KEY) === null) return false;
    try {
      await this.refresh();
      return true;
    } catch {
      return false;
    }
  }

  async logout() {
    const refreshToken = this.session.getItem(REFRESH_KEY);
    this.forget();
    if (refreshToken !== null) {
      try {
        await this.call("POST", "/v1/sessions:logout", { refreshToken }, { anonymous: true });
      } catch {
        // Signed out here either way; the refresh token expires on its own.
      }
    }
  }

  keep(answer) {
    this.accessToken = answer.accessToken;
    this.expiresAt = Date.parse(answer.expiresAt) || this.now() + 5 * 60_000;
    this.accountId = answer.accountId;
    this.session.setItem(REFRESH_KEY, answer.refreshToken);
    this.session.setItem(ACCOUNT_KEY, answer.accountId);
  }

  forget() {
    const was = this.signedIn;
    this.accessToken = null;
    this.expiresAt = 0;
    this.accountId = null;
    this.session.removeItem(REFRESH_KEY);
    this.session.removeItem(ACCOUNT_KEY);
    if (was) for (const listener of this.listeners) listener();
  }

  // One refresh at a time: a spent refresh token presented twice ends the session.
  refresh() {
    if (this.refreshing === null) {
      this.refreshing = this.doRefresh().finally(() => { this.refreshing = null; });
    }
    return this.refreshing;
  }

  async doRefresh() {
    const refreshToken = this.session.getItem(REFRESH_KEY);
    if (refreshToken === null) throw new ApiError(401, { code: 16, message: "signed out" });
    const response = await this.send("POST", "/v1/sessions:refresh", { refreshToken }, null);
    if (!response.ok) {
      const error = await errorOf(response);
      // Only a refusal ends the session; a network error or 5xx may pass.
      if (error.status === 400 || error.status === 401 || error.status === 403) this.forget();
      throw error;
    }
    this.keep(await response.json());
  }

  async token() {
    if (this.accessToken === null || this.now() > this.expiresAt - EARLY_REFRESH_MS) {
      await this.refresh();
    }
    return this.accessToken;
  }

  // --- calls ---------------------------------------------------------------

  send(method, path, body, token, signal) {
    const headers = { "x-tavla-device-id": this.device };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined && body !== null) headers["content-type"] = "application/json";
    return this.fetch(this.base + path, {
      method, headers, signal,
      body: body === undefined || body === null ? undefined : JSON.stringify(body),
    });
  }

  // A signed-in call refreshes once on a 401 and tries again.
  async authorized(method, path, body, signal) {
    let response = await this.send(method, path, body, await this.token(), signal);
    if (response.status === 401) {
      await this.refresh();
      response = await this.send(method, path, body, this.accessToken, signal);
    }
    return response;
  }

  async call(method, path, body = null, { anonymous = false, signal } = {}) {
    const response = anonymous
      ? await this.send(method, path, body, null, signal)
      : await this.authorized(method, path, body, signal);
    if (!response.ok) throw await errorOf(response);
    const text = await response.text();
    return text ? JSON.parse(text) : {};
  }

  get(path, options) { return this.call("GET", path, null, options); }
  post(path, body = {}, options) { return this.call("POST", path, body, options); }
  del(path, options) { return this.call("DELETE", path, null, options); }

  // A server stream over REST: the gateway answers a JSON array and sends each message
  // as it comes. Calls onMessage for each; resolves when the stream ends, rejects on an
  // error (an ApiError for a refused call). Stop it with `signal`.
  async stream(path, onMessage, { signal } = {}) {
    const response = await this.authorized("GET", path, null, signal);
    if (!response.ok) throw await errorOf(response);
    const splitter = new JsonArraySplitter();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      for (const item of splitter.push(decoder.decode(value, { stream: true }))) {
        // An error in the middle of a stream arrives as an element with the error's shape.
        if (item && item.error) throw new ApiError(500, item.error);
        onMessage(item);
      }
    }
  }
}

// Splits a JSON array arriving in pieces into its elements as each one completes.
export class JsonArraySplitter {
  constructor() {
    this.buffer = "";
    this.depth = 0;
    this.inString = false;
    this.escaped = false;
    this.start = -1;
    this.scanned = 0;
  }

  push(text) {
    this.buffer += text;
    const found = [];
    for (let i = this.scanned; i < this.buffer.length; i++) {
      const c = this.buffer[i];
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === "\\") this.escaped = true;
        else if (c === '"') this.inString = false;
        continue;
      }
      if (c === '"') this.inString = true;
      else if (c === "{" || c === "[") {
        this.depth += 1;
        if (this.depth === 2 && c === "{") this.start = i;
      } else if (c === "}" || c === "]") {
        if (this.depth === 2 && c === "}" && this.start >= 0) {
          found.push(JSON.parse(this.buffer.slice(this.start, i + 1)));
          this.start = -1;
        }
        this.depth -= 1;
      }
    }
    if (this.start >= 0) {
      this.buffer = this.buffer.slice(this.start);
      this.start = 0;
    } else {
      this.buffer = "";
    }
    this.scanned = this.buffer.length;
    return found;
  }
}

// Money: integer minor units as the API's strings; shown with two decimals.
export function formatMoney(money) {
  if (!money) return "";
  const units = BigInt(money.minorUnits || "0");
  const sign = units < 0n ? "-" : "";
  const abs = units < 0n ? -units : units;
  const whole = abs / 100n;
  const cents = (abs % 100n).toString().padStart(2, "0");
  return `${sign}${whole}.${cents} ${money.currency}`;
}

export const api = new Api();
