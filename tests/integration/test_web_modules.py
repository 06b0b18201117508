"""The web client's pure modules in Debian's Chromium (Playwright), without a stack: the
files come from web/ through a routed fake origin, so these run in seconds.

- position.js against the rules library (services/backgammon, an independent
  implementation): Position IDs decoded, every legal play's notation applied, on
  positions of random games;
- moves.js: every legal play can be built step by step and is then the play confirmed;
  random presses never make a complete play whose position is not that play's result
  (the board accepts legal plays only);
- names.js: screen names looked up in batches of at most 100, kept, the start of the id
  for an account without one; the lobby and leaderboard show them (as text);
- lobbychat.js: a room's stream shown by screen name (as text), resumed after the last seq
  seen, another room's stream from the start, a refused message's reason said; a Mute
  button beside another player's line mutes them (their lines go), the Muted list
  (the server's, at start) unmutes and reads the room again;
- api.js: a real app's token handling, against a scripted fetch: refresh before expiry,
  one refresh for concurrent 401s (a spent refresh token presented twice would end the
  session), a refused refresh signs the tab out, logout spends the refresh token;
- bracket.js on the service's own brackets (its domain and messages, printed as the
  gateway prints them): rounds as columns, byes, winners, players still to come, standings
  in place order;
- tournaments.js: the lobby's kind, buy-in and fee, seats, status and rules as data, a
  refused registration's reason said, register and unregister; a tournament's page with
  its seed commitment, then (read again on its own) the revealed seed, the bracket and the
  prizes by place, players by screen name, all as text; a satellite's tickets won (holder,
  worth, target, used or not);
- tablestakes.js on messages printed as the gateway prints them: the bring-in, the cube
  cap (the kit's own) and a double refused past it with the reason, each stake left, a
  player leaving after the game in play, the session's next game or its end with players
  by screen name; the lobby lists a
  table-stakes table and opens one with a bring-in, saying the server's refusal.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from playwright.sync_api import Page

from services.backgammon import position_id
from services.backgammon.board import STARTING_BOARD, Board
from services.backgammon.movegen import legal_plays
from services.kit import table_stakes
from services.kit.errors import InvalidArgument
from services.matchmaking.domain import tables as tables_domain
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.rules import Rules, Scheduled, SitAndGo
from services.tournaments.messages import (
    match_message,
    rules_message,
    standing_message,
    tournament_message,
)
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import matchmaking_pb2
from tavla.tournaments.v1 import tournaments_pb2
from tests.support.browser import web_modules_page


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    with web_modules_page() as opened:
        yield opened


def random_positions(seed: int, games: int) -> list[dict[str, Any]]:
    """Positions of random games with a roll each, their legal plays as the game service
    sends them (steps, notation) and each play's result by the rules library."""
    rng = random.Random(seed)
    cases = []
    for _ in range(games):
        board = STARTING_BOARD
        for _turn in range(60):
            dice = (rng.randint(1, 6), rng.randint(1, 6))
            plays = legal_plays(board, dice)
            cases.append({
                "id": position_id.encode(board),
                "player": list(board.player), "opponent": list(board.opponent),
                "plays": [{"notation": p.notation,
                           "steps": [{"fromPoint": a, "toPoint": b} for a, b in p.steps],
                           "result": [list(p.result.player), list(p.result.opponent)]}
                          for p in plays],
            })
            if plays:
                board = rng.choice(plays).result
            if sum(board.player) == 0:
                break
            board = Board(board.opponent, board.player)
    return cases


def test_position_ids_and_notation_agree_with_the_rules_library(page: Page) -> None:
    cases = random_positions(seed=15, games=3)
    assert len(cases) > 75 and any(c["player"][24] for c in cases), "bar positions too"
    wrong = page.evaluate("""async (cases) => {
        const { decodePositionId, applyNotation } = await import("/js/position.js");
        const wrong = [];
        for (const c of cases) {
            const { onRoll, other } = decodePositionId(c.id);
            if (JSON.stringify([onRoll, other]) !== JSON.stringify([c.player, c.opponent]))
                wrong.push(["decode", c.id]);
            for (const p of c.plays) {
                const after = applyNotation(c.player, c.opponent, p.notation);
                if (JSON.stringify(after) !== JSON.stringify(p.result))
                    wrong.push(["apply", c.id, p.notation]);
            }
        }
        return wrong;
    }""", cases)
    assert wrong == []


def test_the_board_builds_every_legal_play_and_nothing_else(page: Page) -> None:
    cases = [c for c in random_positions(seed=1500, games=2) if c["plays"]]
    found = page.evaluate("""async (cases) => {
        const { PlayBuilder } = await import("/js/moves.js");
        let built = 0, randomComplete = 0;
        const wrong = [];
        let seed = 7;
        const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) % 26;
        for (const c of cases) {
            for (const p of c.plays) {
                const b = new PlayBuilder(c.plays, c.player, c.opponent);
                for (const s of p.steps) {
                    b.press(s.fromPoint);
                    if (!b.press(s.toPoint)) wrong.push(["refused", c.id, p.notation, s]);
                }
                const done = b.complete();
                if (!done || JSON.stringify(done.result) !== JSON.stringify(p.result))
                    wrong.push(["not complete", c.id, p.notation]);
                else built += 1;
            }
            // Presses anywhere: whatever completes is a legal play, and the board shows its result.
            const b = new PlayBuilder(c.plays, c.player, c.opponent);
            // Half the presses anywhere at all, half on a point the board offers.
            for (let i = 0; i < 80 && !b.complete(); i++) {
                const offered = [...b.movable(), ...b.targets()];
                b.press(next() % 2 || !offered.length ? next() : offered[next() % offered.length]);
            }
            const done = b.complete();
            if (done) {
                randomComplete += 1;
                const shown = b.position;
                if (JSON.stringify([shown.mine, shown.theirs]) !== JSON.stringify(done.result))
                    wrong.push(["shown", c.id, done.notation]);
            }
        }
        return { built, randomComplete, wrong };
    }""", cases)
    assert found["wrong"] == []
    assert found["built"] == sum(len(c["plays"]) for c in cases)
    assert found["randomComplete"] > 10


def test_a_checker_on_the_bar_can_be_clicked_under_the_centred_cube(page: Page) -> None:
    """The centred cube is drawn on the bar: a click there must reach the bar's checker
    (a hit checker is entered from it), not stop on the cube."""
    page.evaluate("""async () => {
        await new Promise((done) => {
            const css = document.createElement("link");
            css.rel = "stylesheet"; css.href = "/css/app.css"; css.onload = done;
            document.head.append(css);
        });
        const { renderBoard } = await import("/js/board.js");
        const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
        svg.setAttribute("class", "board"); svg.setAttribute("width", "600");
        document.body.replaceChildren(svg);
        const mine = Array(25).fill(0), theirs = Array(25).fill(0);
        mine[24] = 1; mine[5] = 14; theirs[5] = 15;  // one checker of mine on the bar
        window.pressed = [];
        renderBoard(svg, { mine, theirs, dice: [3, 1], cube: { value: 1, owner: "" },
                           selected: null, targets: new Set(), movable: new Set([25]) },
                    (point) => window.pressed.push(point));
    }""")
    page.locator('svg.board [data-point="25"]').click(timeout=5000)
    assert page.evaluate("window.pressed") == [25]


SESSION_SCRIPT = """async () => {
    const { Api } = await import("/js/api.js");
    const store = () => { const m = new Map(); return {
        getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)),
        removeItem: (k) => m.delete(k) }; };
    const log = [];
    let now = 1_000_000;
    let issued = 0;
    let refuseRefresh = false;
    const pair = () => ({ accessToken: `a${++issued}`, refreshToken: `r${issued}`, accountId: "acc",
                          expiresAt: new Date(now + 900_000).toISOString() });
    const reply = (status, body) => new Response(JSON.stringify(body), { status });
    const fetchImpl = async (url, init) => {
        const body = init.body ? JSON.parse(init.body) : null;
        const auth = init.headers.authorization || "";
        log.push([init.method, url, auth, body && body.refreshToken || ""]);
        await new Promise((r) => setTimeout(r, 5));
        if (url === "/v1/sessions") return reply(200, pair());
        if (url === "/v1/sessions:refresh") {
            if (refuseRefresh)
                return reply(401, { code: 16, message: "session ended", details: [] });
            return reply(200, pair());
        }
        if (url === "/v1/sessions:logout") return reply(200, {});
        // The API: only the newest access token is accepted.
        if (auth === `Bearer a${issued}`) return reply(200, { ok: true });
        return reply(401, { code: 16, message: "Jwt is expired", details: [] });
    };
    const session = store();
    const api = new Api({ fetchImpl, session, local: store(), now: () => now });
    let signedOut = 0;
    api.onSignedOut(() => { signedOut += 1; });
    const steps = {};
    await api.login("a@example.com", "pw");
    steps.afterLogin = [api.accessToken, session.getItem("tavla.refresh")];
    log.length = 0;
    await api.get("/v1/x");
    steps.freshCall = log.map((l) => l[1]);
    // Near expiry: refreshed first, with the stored refresh token.
    now += 900_000 - 30_000;
    log.length = 0;
    await api.get("/v1/x");
    steps.nearExpiry = log.map((l) => [l[1], l[3]]);
    // The server rotated keys (every token refused once): two calls at once, one refresh.
    issued += 1;
    log.length = 0;
    await Promise.all([api.get("/v1/x"), api.get("/v1/y")]);
    steps.concurrent401 = log.filter((l) => l[1] === "/v1/sessions:refresh").map((l) => l[3]);
    // A tab reloaded: a new Api on the same sessionStorage signs back in by refreshing.
    const again = new Api({ fetchImpl, session, local: store(), now: () => now });
    steps.restored = await again.restore();
    // Logout spends the current refresh token and forgets both.
    log.length = 0;
    const spent = session.getItem("tavla.refresh");
    await again.logout();
    steps.logout = [log.map((l) => [l[1], l[3]]), spent, session.getItem("tavla.refresh"),
                    again.signedIn];
    // A refused refresh signs the tab out.
    await api.login("a@example.com", "pw");
    refuseRefresh = true;
    issued += 1;
    let error = "";
    try { await api.get("/v1/x"); } catch (e) { error = `${e.name} ${e.code} ${e.message}`; }
    steps.refused = [error, api.signedIn, session.getItem("tavla.refresh"), signedOut];
    return steps;
}"""


def test_the_api_client_handles_tokens_as_a_real_app_does(page: Page) -> None:
    steps = page.evaluate(SESSION_SCRIPT)
    assert steps["afterLogin"] == ["a1", "r1"]
    assert steps["freshCall"] == ["/v1/x"]
    assert steps["nearExpiry"] == [["/v1/sessions:refresh", "r1"], ["/v1/x", ""]]
    # Both calls were refused; one refresh (with r2) served both retries.
    assert steps["concurrent401"] == ["r2"], json.dumps(steps)
    assert steps["restored"] is True
    (calls, spent, left, signed_in) = steps["logout"]
    assert calls == [["/v1/sessions:logout", spent]] and left is None and signed_in is False
    error, signed_in, left, signed_out = steps["refused"]
    assert error == "ApiError 16 session ended"
    assert signed_in is False and left is None and signed_out >= 1


NAMES_SCRIPT = """async () => {
    const { ScreenNames, MAX_PER_CALL } = await import("/js/names.js");
    const ids = Array.from({ length: 250 }, (_, i) =>
        `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
    const calls = [];
    let failing = false;
    const client = { get: async (path) => {
        const asked = new URL(path, location.origin).searchParams.getAll("accountIds");
        calls.push(asked.length);
        if (failing) throw new Error("HTTP 503");
        // Every account has a name but the last ten (opened before screen names).
        const number = (id) => Number(id.slice(-12));
        return { names: asked.filter((id) => number(id) < 240)
                              .map((id) => ({ accountId: id, screenName: `p${number(id)}` })) };
    } };
    const names = new ScreenNames(client);
    const found = await Promise.all([names.load(ids), names.nameOf(ids[0]),
                                     names.nameOf("not-an-account")]);
    const steps = { calls: [...calls], max: MAX_PER_CALL, first: found[0][0], last: found[0][249],
                    again: found[1], notAnAccount: found[2],
                    labels: [names.label(ids[7]), names.label(ids[245])] };
    calls.length = 0;
    await names.load(ids.slice(0, 20));
    steps.cached = calls.length;
    // A failed lookup shows ids this time and asks again the next time.
    failing = true;
    const other = "11111111-1111-4111-8111-111111111111";
    steps.failed = [await names.nameOf(other), names.label(other)];
    failing = false;
    steps.retried = await names.nameOf(other);
    steps.retryCalls = calls;
    return steps;
}"""


def test_screen_names_are_looked_up_in_batches_and_kept(page: Page) -> None:
    steps = page.evaluate(NAMES_SCRIPT)
    # 250 ids (one asked twice, one not an account id) in the same turn: 100 + 100 + 50.
    assert steps["max"] == 100
    assert steps["calls"] == [100, 100, 50], steps
    assert (steps["first"], steps["last"], steps["again"]) == ("p0", None, "p0")
    assert steps["notAnAccount"] is None
    assert steps["labels"] == ["p7", "00000000"]  # no screen name: the start of the id
    assert steps["cached"] == 0
    assert steps["failed"] == [None, "11111111"]
    assert steps["retried"] is None and steps["retryCalls"] == [1, 1]


LOBBY_SCRIPT = """async () => {
    const { api } = await import("/js/api.js");
    const { lobbyView } = await import("/js/lobby.js");
    const ann = "aaaaaaaa-0000-4000-8000-000000000001";
    const bob = "bbbbbbbb-0000-4000-8000-000000000002";
    const old = "cccccccc-0000-4000-8000-000000000003";
    const answers = {
        "/v1/tables": { tables: [{ tableId: "t1", createdByAccountId: ann,
            rules: { kind: "PLAY_KIND_MONEY_GAME", stake: { minorUnits: "1000", currency: "USD" } },
            players: [{ accountId: ann, rating: 1510 }] }] },
        "/v1/leaderboard": { entries: [
            { accountId: bob, rank: 1, display: "1520", rating: 1520 },
            { accountId: old, rank: 2, display: "1510", rating: 1510 }],
            own: { accountId: ann, rank: 3, display: "1500", rating: 1500 } },
    };
    const asked = [];
    api.accessToken = "token";
    api.expiresAt = Date.now() + 3_600_000;
    api.fetch = async (url) => {
        const [path, query] = url.split("?");
        if (path === "/v1/screen-names") {
            const ids = new URLSearchParams(query).getAll("accountIds");
            asked.push(ids.sort());
            const known = { [ann]: "Ann_1", [bob]: "<b>Bob</b>" };
            return new Response(JSON.stringify({ names: ids.filter((id) => known[id])
                .map((id) => ({ accountId: id, screenName: known[id] })) }));
        }
        return new Response(JSON.stringify(answers[path] || {}));
    };
    const view = await lobbyView(() => {});
    document.body.append(view);
    const text = (selector) => [...view.querySelectorAll(selector)].map((e) => e.textContent);
    return { seated: text("tr[data-table] td:nth-child(2)"),
             board: text("table.leaderboard tbody tr"),
             bold: view.querySelectorAll("table.leaderboard b").length, asked };
}"""


def test_the_lobby_shows_players_by_screen_name(page: Page) -> None:
    seen = page.evaluate(LOBBY_SCRIPT)
    assert seen["seated"] == ["Ann_1 (1510)"]
    # Names are text, never HTML; an account without one is shown by the start of its id.
    assert seen["board"] == ["1<b>Bob</b>1520", "2cccccccc1510", "3Ann_11500"]
    assert seen["bold"] == 0


LOBBY_CHAT_SCRIPT = """async () => {
    const { Api } = await import("/js/api.js");
    const { ScreenNames } = await import("/js/names.js");
    const { lobbyChatPanel } = await import("/js/lobbychat.js");
    const ann = "aaaaaaaa-1111-4000-8000-000000000001";
    const bob = "bbbbbbbb-1111-4000-8000-000000000002";
    const old = "cccccccc-1111-4000-8000-000000000003";
    const message = (room, seq, accountId, text) => JSON.stringify(
        { messageId: `m${seq}`, room, seq: String(seq), accountId, text,
          status: "CHAT_STATUS_DELIVERED" });
    const streams = {};  // path with query -> the stream's controller
    const asked = [];
    const posted = [];
    const fetchImpl = async (url, options) => {
        const [path, query] = url.split("?");
        asked.push(url);
        if (path === "/v1/screen-names") {
            const ids = new URLSearchParams(query).getAll("accountIds");
            const known = { [ann]: "Ann_1", [bob]: "<b>Bob</b>" };
            return new Response(JSON.stringify({ names: ids.filter((id) => known[id])
                .map((id) => ({ accountId: id, screenName: known[id] })) }));
        }
        if (path === "/v1/lobby/rooms") return new Response(JSON.stringify({ rooms: [
            { room: "USD", title: "USD lobby", currency: "USD" },
            { room: "PLAY", title: "Play-money lobby", currency: "PLAY" }] }));
        if (path.endsWith(":watch")) {
            const body = new ReadableStream({ start(c) { streams[url] = c; } });
            return new Response(body);
        }
        if (options.method === "POST") {
            const text = JSON.parse(options.body).text;
            posted.push([path, text]);
            const refusal = "message not delivered: offensive language is not allowed"
                + " [offensive_language]";
            if (text.includes("l0ser")) return new Response(JSON.stringify(
                { code: 9, message: refusal, details: [] }), { status: 400 });
            return new Response(JSON.stringify({}));
        }
        return new Response("{}");
    };
    const client = new Api({ fetchImpl });
    client.accessToken = "token";
    client.expiresAt = Date.now() + 3_600_000;
    const panel = lobbyChatPanel({ client, book: new ScreenNames(client) });
    document.body.append(panel);
    const until = async (check) => {
        for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
        return check();
    };
    const lines = () => [...panel.querySelectorAll("ol li")].map((li) => li.textContent);
    const usd = "/v1/lobby/rooms/USD:watch?sinceSeq=0";
    await until(() => streams[usd]);
    const send = (controller, text) => controller.enqueue(new TextEncoder().encode(text));
    send(streams[usd], `[${message("USD", 1, ann, "anyone for a match?")}`);
    send(streams[usd], `,${message("USD", 2, bob, "sure")},${message("USD", 3, old, "me too")}`);
    send(streams[usd], `,${message("USD", 2, bob, "sure")}`);  // seen already: not shown twice
    await until(() => lines().length === 3 && lines()[0].startsWith("Ann_1"));
    // Each line has its Mute button, named by the sender's screen name.
    const labels = () => [...panel.querySelectorAll("ol li button")]
        .map((b) => b.getAttribute("aria-label"));
    await until(() => labels()[0] === "Mute Ann_1");
    const mutes = labels();
    const steps = { rooms: [...panel.querySelectorAll("option")].map((o) => o.textContent), mutes,
                    usd: lines(), bold: panel.querySelectorAll("li b").length };
    const form = panel.querySelector("form");
    const input = panel.querySelector("input[name=text]");
    input.value = "  good luck all ";
    form.requestSubmit();
    await until(() => posted.length === 1 && input.value === "");
    input.value = "what a l0ser";
    form.requestSubmit();
    const alert = panel.querySelector("p.message");
    await until(() => alert.textContent !== "");
    steps.posted = posted;
    steps.refused = [alert.textContent, input.value];
    // The connection drops: the stream is opened again after the last seq seen.
    streams[usd].close();
    const resumed = "/v1/lobby/rooms/USD:watch?sinceSeq=3";
    steps.resumed = Boolean(await until(() => streams[resumed]));
    // Another room: its own stream from the start, the log emptied.
    const select = panel.querySelector("select");
    select.value = "PLAY";
    select.dispatchEvent(new Event("change"));
    const play = "/v1/lobby/rooms/PLAY:watch?sinceSeq=0";
    await until(() => streams[play]);
    send(streams[resumed], `[${message("USD", 4, ann, "late usd message")}`);  // left behind
    send(streams[play], `[${message("PLAY", 1, bob, "hi play room")}`);
    await until(() => lines().length === 1 && lines()[0].includes("hi play room"));
    steps.play = lines();
    panel.cleanup();
    return steps;
}"""


def test_the_lobby_chat_streams_a_room_by_screen_name_and_says_why_a_message_is_refused(
    page: Page,
) -> None:
    steps = page.evaluate(LOBBY_CHAT_SCRIPT)
    assert steps["rooms"] == ["USD lobby", "Play-money lobby"]
    # Screen names as text (never HTML); no screen name: the start of the id; no repeats.
    assert steps["usd"] == [
        "Ann_1: anyone for a match? Mute", "<b>Bob</b>: sure Mute", "cccccccc: me too Mute"
    ]
    assert steps["mutes"] == ["Mute Ann_1", "Mute <b>Bob</b>", "Mute cccccccc"]
    assert steps["bold"] == 0
    assert steps["posted"] == [["/v1/lobby/rooms/USD/messages", "good luck all"],
                               ["/v1/lobby/rooms/USD/messages", "what a l0ser"]]
    refusal = "message not delivered: offensive language is not allowed [offensive_language]"
    assert steps["refused"] == [refusal, "what a l0ser"]  # kept, to be reworded
    assert steps["resumed"] is True
    assert steps["play"] == ["<b>Bob</b>: hi play room Mute"]


LOBBY_MUTE_SCRIPT = """async () => {
    const { Api } = await import("/js/api.js");
    const { ScreenNames } = await import("/js/names.js");
    const { lobbyChatPanel } = await import("/js/lobbychat.js");
    const me = "aaaaaaaa-3333-4000-8000-000000000001";
    const bob = "bbbbbbbb-3333-4000-8000-000000000002";
    const old = "cccccccc-3333-4000-8000-000000000003";
    const line = (seq, accountId, text) => JSON.stringify(
        { messageId: `m${seq}`, room: "USD", seq: String(seq), accountId, text,
          status: "CHAT_STATUS_DELIVERED" });
    const streams = {};
    const opened = [];
    const posted = [];
    const fetchImpl = async (url, options) => {
        const [path, query] = url.split("?");
        if (path === "/v1/screen-names") {
            const ids = new URLSearchParams(query).getAll("accountIds");
            const known = { [me]: "Me_1", [bob]: "Bob" };
            return new Response(JSON.stringify({ names: ids.filter((id) => known[id])
                .map((id) => ({ accountId: id, screenName: known[id] })) }));
        }
        if (path === "/v1/lobby/mutes") return new Response(JSON.stringify({ mutes: [
            { accountId: old, screenName: "", muted: true }] }));
        if (path === "/v1/lobby/rooms") return new Response(JSON.stringify({ rooms: [
            { room: "USD", title: "USD lobby", currency: "USD" }] }));
        if (path.endsWith(":watch")) {
            opened.push(url);
            const body = new ReadableStream({ start(c) { streams[url] = c; } });
            return new Response(body);
        }
        if (path === "/v1/lobby/chat:mute") {
            const asked = JSON.parse(options.body);
            posted.push(asked);
            if (asked.accountId === "refused") return new Response(JSON.stringify(
                { code: 3, message: "you cannot mute yourself", details: [] }), { status: 400 });
            return new Response(JSON.stringify(
                { accountId: asked.accountId, screenName: "Bob", muted: asked.muted }));
        }
        return new Response("{}");
    };
    const client = new Api({ fetchImpl });
    client.accessToken = "token";
    client.expiresAt = Date.now() + 3_600_000;
    client.accountId = me;
    const panel = lobbyChatPanel({ client, book: new ScreenNames(client) });
    document.body.append(panel);
    const until = async (check) => {
        for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
        return check();
    };
    const lines = () => [...panel.querySelectorAll("ol li")].map((li) => li.textContent);
    const mutedShown = () => [...panel.querySelectorAll("ul.muted-players li")]
        .map((li) => li.textContent);
    const send = (url, text) => streams[url].enqueue(new TextEncoder().encode(text));
    const first = "/v1/lobby/rooms/USD:watch?sinceSeq=0";
    await until(() => streams[first]);
    send(first, `[${line(1, me, "hello")},${line(2, bob, "hi me")},${line(3, bob, "again")}`);
    send(first, `,${line(4, old, "a muted line sent before the mute reached the server")}`);
    const button = () => panel.querySelector("ol li button");
    await until(() => lines().length === 3 && lines()[0].startsWith("Me_1"));
    await until(() => button().getAttribute("aria-label") === "Mute Bob");
    const buttons = [...panel.querySelectorAll("ol li button")].map((b) => b.textContent);
    const steps = { before: lines(), mutedAtStart: mutedShown(), buttons };
    button().click();  // bob's first line
    await until(() => lines().length === 1);
    steps.afterMute = lines();
    steps.muted = mutedShown();
    send(first, `,${line(5, bob, "still there?")},${line(6, me, "bye")}`);
    await until(() => lines().length === 2);
    steps.later = lines();
    // Unmute: the room is read again from the start (the server sends bob's lines again).
    panel.querySelector("ul.muted-players li[data-account='" + bob + "'] button").click();
    await until(() => opened.length === 2);
    steps.reopened = opened;
    steps.mutedAfter = mutedShown();
    steps.posted = posted;
    panel.cleanup();
    return steps;
}"""


def test_the_lobby_chat_mutes_a_player_beside_their_line_and_unmutes_them(page: Page) -> None:
    steps = page.evaluate(LOBBY_MUTE_SCRIPT)
    # The player's own line has no Mute button; a player muted already (the server's list)
    # is not shown even when a line of theirs arrives.
    assert steps["before"] == ["Me_1: hello", "Bob: hi me Mute", "Bob: again Mute"]
    assert steps["buttons"] == ["Mute", "Mute"]
    assert steps["mutedAtStart"] == ["cccccccc Unmute"]
    assert steps["afterMute"] == ["Me_1: hello"]
    assert steps["muted"] == ["cccccccc Unmute", "Bob Unmute"]
    assert steps["later"] == ["Me_1: hello", "Me_1: bye"]
    assert steps["mutedAfter"] == ["cccccccc Unmute"]
    assert steps["reopened"] == ["/v1/lobby/rooms/USD:watch?sinceSeq=0"] * 2
    bob = "bbbbbbbb-3333-4000-8000-000000000002"
    assert steps["posted"] == [{"accountId": bob, "muted": True},
                               {"accountId": bob, "muted": False}]


# --- tournaments: bracket.js and tournaments.js ------------------------------------------

ANN = "aaaaaaaa-2222-4000-8000-000000000001"
BOB = "bbbbbbbb-2222-4000-8000-000000000002"
CAT = "cccccccc-2222-4000-8000-000000000003"
DAN = "dddddddd-2222-4000-8000-000000000004"
EVE = "eeeeeeee-2222-4000-8000-000000000005"
SCREEN_NAMES = {ANN: "Ann_1", BOB: "<b>Bob</b>", CAT: "Cat", DAN: "Dan", EVE: "Eve"}


def api_json(message: Message) -> Any:
    """A message as the gateway's transcoder answers it (every field printed)."""
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def five_entrant_bracket() -> list[Any]:
    """The service's own bracket of five (three byes), as the API shows it: the one real
    first-round match played (Eve won), a semi-final forfeited by Cat's no-show (Eve on to
    the final), the other semi-final ready."""
    rules = Rules(SitAndGo(8), (3, 5), "blitz", "USD", 1_001, 99, "standard")
    bracket = brackets.build([ANN, BOB, CAT, DAN, EVE])
    bracket = brackets.start(bracket, "r1m4", "g1").bracket
    bracket = brackets.record_result(bracket, "r1m4", game_id="g1", winner=EVE).bracket
    bracket = brackets.record_forfeit(
        bracket, "r2m2", loser=CAT, decision=brackets.Decision.NO_SHOW
    ).bracket
    return [api_json(match_message(rules, m)) for m in bracket.matches()] + [
        [api_json(standing_message(s, "USD", None)) for s in brackets.standings(bracket)]
    ]


def test_the_bracket_is_laid_out_by_round_with_byes_winners_and_players_to_come(
    page: Page,
) -> None:
    *matches, standings = five_entrant_bracket()
    laid_out = page.evaluate("""async ([matches, standings]) => {
        const { bracketColumns, standingsInOrder, placeText } = await import("/js/bracket.js");
        const seat = (s) => s.kind === "player"
            ? `${s.accountId.slice(0, 3)}${s.won ? "+" : ""}${s.lost ? "-" : ""}`
            : s.kind === "bye" ? "bye" : `from ${s.from}`;
        return {
            columns: bracketColumns(matches).map((c) => [c.title, c.matches.map((m) =>
                [m.matchId, m.length, m.state, m.decision, ...m.seats.map(seat)])]),
            // The API's order is not relied upon: shuffled, the layout is the same.
            reversed: JSON.stringify(bracketColumns([...matches].reverse()))
                === JSON.stringify(bracketColumns(matches)),
            standings: standingsInOrder(standings).map((s) =>
                `${placeText(s.bestPlace, s.worstPlace)} ${s.accountId.slice(0, 3)}`),
            empty: bracketColumns([]),
        };
    }""", [matches, standings])
    assert laid_out["columns"] == [
        ["Quarter-finals", [
            ["r1m1", 3, "finished", "bye", "aaa+", "bye"],
            ["r1m2", 3, "finished", "bye", "bbb+", "bye"],
            ["r1m3", 3, "finished", "bye", "ccc+", "bye"],
            ["r1m4", 3, "finished", "played", "ddd-", "eee+"],
        ]],
        ["Semi-finals", [
            ["r2m1", 5, "ready", "", "aaa", "bbb"],
            ["r2m2", 5, "finished", "no_show", "ccc-", "eee+"],
        ]],
        ["Final", [["r3m1", 5, "waiting", "", "from r2m1", "eee"]]],
    ]
    assert laid_out["reversed"] is True
    # Places by the README's rule: the final's players 1-2, the semi-finalists 1-4 while
    # in and 3-4 once out, the one first-round loser of five 5th.
    assert laid_out["standings"] == ["1-2 eee", "1-4 aaa", "1-4 bbb", "3-4 ccc", "5 ddd"]
    assert laid_out["empty"] == []


FAKE_SERVER = """
    const { Api } = await import("/js/api.js");
    const { ScreenNames } = await import("/js/names.js");
    const posted = [];
    const fetchImpl = async (url, options) => {
        const [path, query] = url.split("?");
        if (path === "/v1/screen-names") {
            const ids = new URLSearchParams(query).getAll("accountIds");
            return new Response(JSON.stringify({ names: ids.filter((id) => known[id])
                .map((id) => ({ accountId: id, screenName: known[id] })) }));
        }
        if (options.method === "POST") {
            posted.push(path);
            const [status, body] = answerPost(path);
            return new Response(JSON.stringify(body), { status });
        }
        return new Response(JSON.stringify(answerGet(path, query || "")));
    };
    const client = new Api({ fetchImpl });
    client.accessToken = "token";
    client.expiresAt = Date.now() + 3_600_000;
    client.accountId = viewer;
    const book = new ScreenNames(client);
    const until = async (check) => {
        for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
        return check();
    };
    const texts = (root, selector) =>
        [...root.querySelectorAll(selector)].map((e) => e.textContent);
"""


NOW = datetime(2026, 12, 5, 14, tzinfo=UTC)
SEED = bytes(range(32))


def listed(tournament: Tournament, entrants: list[str]) -> Any:
    """The service's own Tournament message of ``tournament`` with ``entrants`` registered."""
    for account in entrants:
        tournament = lobby.register(tournament, Entrant(account, "hold", "fee", NOW), NOW)
    return api_json(tournament_message(tournament))


def play_sit_and_go(tid: str, entrants: list[str]) -> Any:
    rules = Rules(SitAndGo(2), (3,), "blitz", "PLAY", 10_000, 500, "standard")
    return listed(Tournament(tid, "<i>Sit & Go 2</i>", rules, SEED, NOW), entrants)


def usd_scheduled(tid: str) -> Any:
    rules = Rules(
        Scheduled(datetime(2026, 12, 24, 18, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC),
                  datetime(2026, 12, 24, 17, tzinfo=UTC), 4, 64),
        (3, 5, 7), "standard", "USD", 1_001, 99, "standard",
    )
    return listed(Tournament(tid, "Christmas Open", rules, SEED, NOW), [BOB, CAT])


LOBBY_TOURNAMENTS_SCRIPT = """async ([viewer, known, tournaments]) => {
""" + FAKE_SERVER + """
    let registered = false;
    const refusal = "registration refused: the wallet cannot cover the buy-in and fee "
        + "(105.00 PLAY)";
    let refuse = true;
    const withViewer = (t) => ({ ...t, entrants: [...t.entrants, viewer] });
    const answerGet = () => ({ tournaments: tournaments.map((t) =>
        t.tournamentId === "t-play" && registered ? withViewer(t) : t) });
    const answerPost = (path) => {
        if (refuse) return [400, { code: 9, message: refusal, details: [] }];
        registered = path.endsWith(":register");
        return [200, answerGet().tournaments[0]];
    };
    const { tournamentsView } = await import("/js/tournaments.js");
    const view = await tournamentsView({ client });
    document.body.replaceChildren(view);
    const row = (id) => view.querySelector(`tr[data-tournament="${id}"]`);
    const cells = (id) => texts(row(id), ":scope > td");
    const steps = { play: cells("t-play"), usd: cells("t-usd"),
                    name: row("t-play").querySelector("a").textContent,
                    link: row("t-play").querySelector("a").getAttribute("href"),
                    rules: texts(row("t-usd"), "dd"), italic: view.querySelectorAll("i").length };
    const alert = view.querySelector("p.entry-message");
    row("t-play").querySelector("button.register").click();
    await until(() => alert.textContent !== "");
    steps.refused = [alert.textContent, alert.className];
    refuse = false;
    row("t-play").querySelector("button.register").click();
    await until(() => row("t-play").querySelector("button.unregister"));
    steps.registered = [alert.textContent, cells("t-play")];
    row("t-play").querySelector("button.unregister").click();
    await until(() => row("t-play").querySelector("button.register"));
    steps.left = [alert.textContent, cells("t-play")];
    steps.posted = posted;
    return steps;
}"""


def test_the_tournament_lobby_shows_rules_as_data_and_says_why_registration_is_refused(
    page: Page,
) -> None:
    tournaments = [play_sit_and_go("t-play", [ANN]), usd_scheduled("t-usd")]
    steps = page.evaluate(LOBBY_TOURNAMENTS_SCRIPT, [DAN, SCREEN_NAMES, tournaments])
    assert steps["play"] == ["Sit & Go", "100.00 PLAY + 5.00 PLAY fee", "1/2", "registering",
                             "Register"]
    assert steps["usd"] == ["Scheduled", "10.01 USD + 0.99 USD fee", "2/64 (at least 4)",
                            "registering", "Register"]
    # The name is text: the markup in it is shown, never made.
    assert (steps["name"], steps["link"], steps["italic"]) == ("<i>Sit & Go 2</i>",
                                                              "#/tournament/t-play", 0)
    rules = steps["rules"]
    assert rules[0] == "Scheduled"
    assert rules[1] == "Single elimination, 4 to 64 entrants (cancelled and refunded below 4)"
    assert rules[2].startswith("registration ") and ", starts " in rules[2]
    assert rules[3:] == ["3 points in round 1, 5 in round 2, 7 in round 3 and later",
                         "Crawford rule, no Jacoby rule, no beavers", "standard",
                         "10.01 USD + 0.99 USD fee", "standard",
                         # Two entrants so far, its minimum 4: 70/30 of 40.04 (28.028 and
                         # 12.012), the cent left over to 1st.
                         "1: 28.03 USD (70 %), 2: 12.01 USD (30 %), for 4 entrants"]
    assert steps["refused"] == [
        "<i>Sit & Go 2</i>: registration refused: the wallet cannot cover the buy-in and fee"
        " (105.00 PLAY)", "message entry-message error"]
    message, cells = steps["registered"]
    assert message == "You are registered for <i>Sit & Go 2</i>."
    assert cells[2:] == ["2/2", "registering", "Unregister"]
    message, cells = steps["left"]
    assert message == "You left <i>Sit & Go 2</i>." and cells[2:] == ["1/2", "registering",
                                                                       "Register"]
    assert steps["posted"] == ["/v1/tournaments/t-play:register"] * 2 + [
        "/v1/tournaments/t-play:unregister"]


def drawn_final(tid: str, *, finished: bool) -> Any:
    """A play-money Sit & Go of two as the service shows it once drawn, its final's game
    "g1" in play, or once paid: Bob won the final and the whole pool (the standard
    table's row for two pays the winner 100 %)."""
    rules = Rules(SitAndGo(2), (3,), "blitz", "PLAY", 10_000, 500, "standard")
    bracket = brackets.build([ANN, BOB])
    bracket = brackets.start(bracket, "r1m1", "g1").bracket
    if finished:
        bracket = brackets.record_result(bracket, "r1m1", game_id="g1", winner=BOB).bracket
    status = tournaments_pb2.STATUS_FINISHED if finished else tournaments_pb2.STATUS_RUNNING
    shown = tournaments_pb2.Tournament(
        tournament_id=tid, name="Sit & Go 2", rules=rules_message(rules),
        status=status, entrants=[BOB, ANN],
        seed_commitment="ab" * 32, seed="5e" * 32, seating=[ANN, BOB],
        prize_pool=money_pb2.Money(minor_units=20_000, currency="PLAY"),
    )
    shown.bracket.extend(match_message(rules, m) for m in bracket.matches())
    shown.standings.extend(
        standing_message(s, "PLAY", {BOB: 20_000}.get(s.player) if finished else None)
        for s in brackets.standings(bracket)
    )
    return api_json(shown)


TOURNAMENT_PAGE_SCRIPT = """async ([viewer, known, before, playing, after]) => {
""" + FAKE_SERVER + """
    let current = before;
    const answerGet = () => current;
    const answerPost = () => {
        current = { ...before, entrants: [...before.entrants, viewer] };
        return [200, current];
    };
    const { tournamentView } = await import("/js/tournaments.js");
    const view = await tournamentView("t-1", { client, book });
    document.body.replaceChildren(view);
    const steps = { before: {
        heading: view.querySelector("h2").textContent,
        commitment: view.querySelector(".commitment").textContent,
        seed: view.querySelector(".revealed").textContent,
        bracket: view.querySelector(".bracket-empty").textContent,
        entrants: view.querySelector(".entrants").textContent,
        prizes: [...view.querySelectorAll(".rules dd")].at(-1).textContent } };
    view.querySelector("button.register").click();
    await until(() => view.querySelector("button.unregister"));
    steps.registered = [view.querySelector("p.entry-message").textContent,
                        view.querySelector(".entrants").textContent];
    // The draw: the page reads the tournament again on its own, the viewer's game linked.
    current = playing;
    for (let i = 0; i < 500 && !view.querySelector("a.play"); i++)
        await new Promise((r) => setTimeout(r, 10));
    steps.play = [view.querySelector("a.play").textContent,
                  view.querySelector("a.play").getAttribute("href"),
                  texts(view, ".match-note")];
    // The final is played and paid.
    current = after;
    for (let i = 0; i < 500 && !view.querySelector(".prize:not(:empty)"); i++)
        await new Promise((r) => setTimeout(r, 10));
    const bracket = view.querySelector(".bracket");
    steps.after = {
        rounds: texts(bracket, "h4"),
        seats: texts(bracket, ".seat"), won: texts(bracket, ".seat.won"),
        note: texts(bracket, ".match-note"),
        seed: view.querySelector(".revealed").textContent,
        seating: view.querySelector(".seating").textContent,
        status: view.querySelector("p.status").textContent,
        standings: [...view.querySelectorAll("table.standings tbody tr")].map((tr) =>
            texts(tr, "td, th")),
        buttons: view.querySelectorAll("button").length,
        bold: view.querySelectorAll("b").length };
    view.cleanup();
    return steps;
}"""


def test_the_tournament_page_draws_the_bracket_seed_and_prizes_by_screen_name(
    page: Page,
) -> None:
    before = play_sit_and_go("t-1", [BOB])
    playing, finished = (drawn_final("t-1", finished=done) for done in (False, True))
    steps = page.evaluate(TOURNAMENT_PAGE_SCRIPT, [ANN, SCREEN_NAMES, before, playing, finished])
    assert steps["before"] == {
        "heading": "<i>Sit & Go 2</i>", "commitment": hashlib.sha256(SEED).hexdigest(),
        "prizes": "1: 200.00 PLAY (100 %), for 2 entrants",
        "seed": "revealed when registration closes",
        "bracket": "The bracket is drawn when registration closes.", "entrants": "<b>Bob</b>"}
    assert steps["registered"] == ["You are registered for <i>Sit & Go 2</i>.",
                                   "<b>Bob</b>, Ann_1"]
    assert steps["play"] == ["Play your match", "#/game/g1", ["3 points, playing"]]
    after = steps["after"]
    assert after["rounds"] == ["Final"]
    assert after["seats"] == ["Ann_1", "<b>Bob</b> (won)"] and after["won"] == ["<b>Bob</b> (won)"]
    assert after["note"] == ["3 points"]
    assert after["seed"] == "5e" * 32 and after["seating"] == "Ann_1, <b>Bob</b>"
    assert after["status"] == "Status: finished · seats 2/2 · prize pool 200.00 PLAY"
    assert [row[:2] + row[4:] for row in after["standings"]] == [
        ["1", "<b>Bob</b>", "200.00 PLAY"], ["2", "Ann_1", ""]]
    assert after["buttons"] == 0 and after["bold"] == 0  # no entry after the start; text only


# --- table stakes: tablestakes.js, the lobby's form and list -------------------------------

STAKES_SCRIPT = """async ({ games, tables, ordinary }) => {
    const ts = await import("/js/tablestakes.js");
    const label = (id) => ({ [ANN]: "Ann_1", [BOB]: "<b>Bob</b>" }[id] || id.slice(0, 8));
    const ANN = tables.settled.players[0].accountId;
    const BOB = tables.settled.players[1].accountId;
    return {
        stakes: [ts.stakesText(tables.settled.rules), ts.stakesText(ordinary.rules)],
        bringIn: [ts.bringIn(tables.settled.rules), ts.bringIn(ordinary.rules)],
        caps: games.map((g) => ts.capText(g)),
        refusals: games.map((g) => ts.doubleRefusal(g)),
        left: ts.stakesLeft(tables.settled),
        after: [ts.sessionAfter(tables.first, tables.first.gameId, label),
                ts.sessionAfter(tables.settled, tables.first.gameId, label),
                ts.sessionAfter(tables.settled, tables.settled.gameId, label),
                ts.sessionAfter(tables.won, tables.settled.gameId, label),
                ts.sessionAfter(tables.left, tables.settled.gameId, label)],
        leaving: [ts.leavingText(tables.settled, label), ts.leavingText(tables.leaving, label),
                  ts.leavingText(tables.left, label)],
        mayLeave: [ts.mayLeave(tables.settled, ANN), ts.mayLeave(tables.settled, "someone"),
                   ts.mayLeave(tables.leaving, BOB), ts.mayLeave(tables.won, BOB)],
    };
}"""


def stakes_table(game_id: str, left: tuple[int, int], **fields: Any) -> Any:
    """A $1-a-point table whose players each brought $2.00, as GetTable shows it."""
    rules = game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME, table_stakes_minor_units=200,
        stake=money_pb2.Money(minor_units=100, currency="USD"))
    players = [
        matchmaking_pb2.SeatedPlayer(account_id=a, rating=1500, table_stake_left_minor_units=s)
        for a, s in zip((ANN, BOB), left, strict=True)
    ]
    return api_json(matchmaking_pb2.Table(table_id="t1", rules=rules, game_id=game_id,
                                          players=players, **fields))


def test_table_stakes_are_shown_with_the_cap_the_next_game_and_the_session_end(
    page: Page,
) -> None:
    playing = matchmaking_pb2.TABLE_STATUS_PLAYING
    closed = matchmaking_pb2.TABLE_STATUS_CLOSED
    tables = {
        "first": stakes_table("g1", (200, 200), status=playing, games_played=1),
        "settled": stakes_table("g2", (100, 290), status=playing, games_played=2),
        "leaving": stakes_table("g2", (100, 290), status=playing, games_played=2,
                                leaving_account_id=BOB),
        "won": stakes_table("g2", (0, 380), status=closed, games_played=2,
                            close_reason=f"table stakes: {BOB} holds both stakes"),
        "left": stakes_table("g2", (150, 230), status=closed, games_played=2,
                             leaving_account_id=ANN,
                             close_reason=f"table stakes: {ANN} left the table between games"),
    }
    # Games as the game service shows them: the cap is the kit's, from the smaller stake left.
    games = [
        api_json(game_pb2.Game(game_id=f"g{n}", cube_value=cube,
                               table_stakes_max_cube=table_stakes.max_cube(100, at_risk)))
        for n, (cube, at_risk) in enumerate([(1, 200), (2, 400), (1, 100), (4, 400)])
    ] + [api_json(game_pb2.Game(game_id="plain", cube_value=32))]
    dollar = money_pb2.Money(minor_units=100, currency="USD")
    ordinary = api_json(game_pb2.Game(rules=game_pb2.TableRules(
        kind=game_pb2.PLAY_KIND_MONEY_GAME, stake=dollar)))
    seen = page.evaluate(STAKES_SCRIPT, {"games": games, "tables": tables, "ordinary": ordinary})
    assert seen["stakes"] == ["table stakes 2.00 USD each", ""]
    assert seen["bringIn"] == [200, 0]
    assert seen["caps"] == [
        "cube capped at 2 by the table stakes", "cube capped at 4 by the table stakes",
        "cube capped at 1 by the table stakes", "cube capped at 4 by the table stakes", ""]
    assert seen["refusals"] == [
        "",  # 1 -> 2 under a cap of 2
        "",  # 2 -> 4 under a cap of 4
        "no double: the cube may not reach 2 in this game"
        " (cube capped at 1 by the table stakes)",
        "no double: the cube may not reach 8 in this game"
        " (cube capped at 4 by the table stakes)",
        "",  # no table stakes: the cube's own cap is the server's to say
    ]
    assert seen["left"] == [{"accountId": ANN, "text": "1.00 USD"},
                            {"accountId": BOB, "text": "2.90 USD"}]
    assert seen["after"] == [
        None,  # the first game is not settled yet
        {"next": "g2"},  # settled: the session's next game
        None,
        {"ended": "Session over after 2 games: table stakes: <b>Bob</b> holds both stakes"},
        {"ended": "Session over after 2 games: table stakes: Ann_1 left the table between games"},
    ]
    # A leave takes effect after the game in play: said while it is played, offered once.
    assert seen["leaving"] == ["", "<b>Bob</b> leaves the table after this game", ""]
    assert seen["mayLeave"] == [True, False, False, False]


STAKES_LOBBY_SCRIPT = """async ({ table, refusal }) => {
    const { api } = await import("/js/api.js");
    const { lobbyView } = await import("/js/lobby.js");
    const posted = [];
    api.accessToken = "token";
    api.expiresAt = Date.now() + 3_600_000;
    api.fetch = async (url, options) => {
        const [path] = url.split("?");
        if (path === "/v1/tables" && options.method === "POST") {
            posted.push(JSON.parse(options.body).rules);
            return new Response(JSON.stringify({ code: 3, message: refusal, details: [] }),
                                { status: 400 });
        }
        if (path === "/v1/tables") return new Response(JSON.stringify({ tables: [table] }));
        if (path === "/v1/screen-names") return new Response(JSON.stringify({ names: [] }));
        return new Response("{}");
    };
    const view = await lobbyView(() => {});
    document.body.append(view);
    const form = view.querySelector("form[aria-label='Open a table']");
    const input = (name) => form.querySelector(`[name=${name}]`);
    input("stake").value = "1.00";
    input("currency").value = "USD";
    input("tableStakes").value = "0.99";
    form.requestSubmit();
    const alert = form.querySelector("p.message");
    for (let i = 0; i < 200 && !alert.textContent; i++) await new Promise((r) => setTimeout(r, 10));
    const shown = { listed: view.querySelector("tr[data-table] td").textContent, posted,
                    refusal: alert.textContent, error: alert.classList.contains("error") };
    view.cleanup();
    view.remove();
    return shown;
}"""


def test_the_lobby_opens_a_table_stakes_table_and_shows_the_servers_refusal(page: Page) -> None:
    table = stakes_table("", (0, 0), status=matchmaking_pb2.TABLE_STATUS_OPEN)
    # The refusal the matchmaking domain gives a bring-in below one game at cube 1.
    with pytest.raises(InvalidArgument) as refused:
        tables_domain.parse_rules(
            kind=tables_domain.Kind.MONEY_GAME, match_length=0, stake_minor=100,
            currency="USD", cube_cap=0, beaver=False, jacoby=False, crawford=None,
            clock="", table_stakes_minor=99)
    refusal = str(refused.value)
    seen = page.evaluate(STAKES_LOBBY_SCRIPT, {"table": table, "refusal": refusal})
    assert seen["listed"] == "money game, 1.00 USD a point, table stakes 2.00 USD each"
    assert seen["posted"] == [{"kind": "PLAY_KIND_MONEY_GAME", "tableStakesMinorUnits": "99",
                               "stake": {"minorUnits": "100", "currency": "USD"}}]
    assert "must cover at least one game at cube 1" in refusal
    assert (seen["refusal"], seen["error"]) == (refusal, True)


SATELLITE_PAGE_SCRIPT = """async ([viewer, known, satellite]) => {
""" + FAKE_SERVER + """
    const answerGet = () => satellite;
    const answerPost = () => [500, {}];
    const { tournamentView } = await import("/js/tournaments.js");
    const view = await tournamentView("t-sat", { client, book });
    document.body.replaceChildren(view);
    await until(() => !view.querySelector(".ticket")?.textContent.includes("-"));
    const steps = { tickets: texts(view, ".tickets li"),
                    classes: [...view.querySelectorAll(".tickets li")].map((e) => e.className),
                    links: [...view.querySelectorAll(".tickets a")].map((a) =>
                        a.getAttribute("href")),
                    heading: texts(view, "h3").includes("Tickets won"),
                    bold: view.querySelectorAll("b").length };
    view.cleanup();
    return steps;
}"""


def test_a_satellites_page_lists_the_tickets_won_with_their_target_and_use(page: Page) -> None:
    """A satellite's prizes are tickets, not cash: its page names each holder, what the
    ticket is worth, links its target, and says whether it has been used."""
    satellite = tournaments_pb2.Tournament(
        tournament_id="t-sat", name="Satellite 4", status=tournaments_pb2.STATUS_FINISHED,
        rules=tournaments_pb2.Rules(sit_and_go=tournaments_pb2.SitAndGo(seats=4),
                                    match_lengths=[1], clock="blitz", currency="USD",
                                    buy_in=500, entry_fee=25, prize_table="tickets",
                                    target_tournament_id="t-target"),
        entrants=[ANN, BOB, CAT, DAN],
    )  # fmt: skip
    satellite.tickets.extend([
        tournaments_pb2.Ticket(account_id=ANN, target_tournament_id="t-target", used=True,
                               value=money_pb2.Money(minor_units=1_000, currency="USD")),
        tournaments_pb2.Ticket(account_id=BOB, target_tournament_id="t-target",
                               value=money_pb2.Money(minor_units=1_000, currency="USD")),
    ])  # fmt: skip
    steps = page.evaluate(SATELLITE_PAGE_SCRIPT, [CAT, SCREEN_NAMES, api_json(satellite)])
    assert steps["heading"] is True, steps
    assert steps["tickets"] == [
        "Ann_1: a ticket worth 10.00 USD to its target tournament (used)",
        "<b>Bob</b>: a ticket worth 10.00 USD to its target tournament (not used yet)",
    ]
    assert steps["classes"] == ["ticket used", "ticket"]
    assert steps["links"] == ["#/tournament/t-target"] * 2
    assert steps["bold"] == 0  # a screen name is text, never markup
