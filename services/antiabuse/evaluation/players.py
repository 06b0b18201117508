"""Simulated players as a client app is: REST calls through the gateway, nothing else.

Each account signs up, logs in with its device id and deposits sandbox dollars; each
call names the player's address in ``X-Forwarded-For`` (the gateway must trust one
proxy hop, ``TAVLA_DEV_XFF_TRUSTED_HOPS=1``, as the end-to-end tests run it). A game
is two coroutines, one per seat, each reading the game and acting when awaited,
heart-beating while it waits; its behaviour is its persona's (``population.py``).
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from services.antiabuse.evaluation.population import Persona, Plan, Role, Table
from services.antiabuse.evaluation.skill import (
    Option,
    choose,
    cube_action,
    cubeful_equity,
    ranked_options,
    worst,
)
from services.geo.devdata import malta_address

PASSWORD = "correct horse battery staple"
STAKE = 500  # $5 a point: a money game holds 3 x $5 of each player
FUNDS = 20_000  # $200 each, and again whenever less than TOP_UP_BELOW is left
MAX_CUBE = 8  # nobody redoubles past 8: the holds stay within the deposit
# What a table can come to hold of a player (a gammon at the largest cube): less left, a
# deposit before the next table.
TOP_UP_BELOW = 3 * STAKE * MAX_CUBE
OK_OR_MOVED_ON = (200, 400, 409)
# A disconnecter walks away when its cubeful equity (0-ply, per unit of cube) on roll is at
# or below this: a settlement share (1 + E/3)/2 of at most 0.383, under the detector's
# "losing" line of 0.4 (E = -0.6) with a margin for the settlement's deeper analysis.
WALK_AWAY_AT = -0.75
WALK_AFTER_PLAYS = 2  # not in the opening (nothing is lost yet)
RESIGN_AFTER_PLAYS = {Role.DUMP_GIVER: 3, Role.TANKER: 1}  # losing on purpose: when to resign
# Roles whose evidence is not their play leave a game by resigning once their part is done
# (the ring's is who it is; the harasser's and spammer's their chat: 3 lines, 4 lines).
LEAVES_AFTER_PLAYS = {Role.RING: 2, Role.HARASSER: 4, Role.SPAMMER: 3}
DOUBLES = {"double_take", "double_pass", "too_good"}  # people cash what is too good too
# An engine plays on for the gammon when too good: doubling there is graded an error
# (about 0.12), and one such in a bot's hundred decisions hides it from assistance.
ENGINE_DOUBLES = {"double_take", "double_pass"}
PASSES = {"double_pass", "too_good"}  # the doubler's view: the responder drops
MAX_LOOKS = 20_000  # a game still running after this many reads is a bug, not a game
GREETINGS = ["gl", "hi, good luck", "good luck, have fun", "hello", "hi all", "glhf"]
FRIENDLY = ["nice roll", "well played", "gg", "thanks, you too", "ouch", "lucky me"]
INSULTS = ["you are a fucking idiot", "shut up you stupid moron", "go to hell you bastard",
           "what a piece of shit player", "fuck off loser"]
SPAM = ["cheap chips at http://chips.example.com", "visit www.bgbonus.example for free money",
        "DM me for a deposit bonus, send money to my account",
        "cheap chips at http://chips.example.com"]
CONSULTING = ["what should I play at the other table?", "at my other table I rolled 6-5",
              "on another game: play 13/7 8/7 there"]


T = TypeVar("T")
NET_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gnubg")


class SimulationError(RuntimeError):
    """A call the simulator needed was refused: the population could not be played."""


@dataclass
class Player:
    persona: Persona
    client: httpx.AsyncClient
    account_id: str = ""
    token: str = ""
    rng: random.Random = field(default_factory=random.Random)
    awaited: bool = False  # a game is waiting for this account's decision now
    walks: int = 0  # games this account walked away from (a disconnecter)
    games: list[str] = field(default_factory=list)  # every game it sat down to, in order
    wallet: asyncio.Lock = field(default_factory=asyncio.Lock)  # one top-up at a time

    def headers(self) -> dict[str, str]:
        headers = {"x-forwarded-for": malta_address(self.persona.address),
                   "x-tavla-device-id": self.persona.device}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        return headers

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None,
                   ok: tuple[int, ...] = (200,)) -> dict[str, Any]:
        for attempt in range(8):
            try:
                answer = await self.client.request(method, path, json=body,
                                                   headers=self.headers())
            except httpx.TransportError:  # a loaded machine: the app tries again
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if answer.status_code == 401 and self.token:  # the access token expired
                await self.log_in()
                continue
            if answer.status_code == 429 or answer.status_code >= 500:
                await asyncio.sleep(0.5 * (attempt + 1))  # rate limited or overloaded
                continue
            break
        else:
            raise SimulationError(f"{self.persona.name}: {method} {path}: no answer")
        if answer.status_code not in ok:
            raise SimulationError(f"{self.persona.name}: {method} {path}: "
                                  f"{answer.status_code} {answer.text[:300]}")
        found: dict[str, Any] = answer.json() if answer.content else {}
        return found

    @property
    def email(self) -> str:
        return f"{self.persona.name}@sim.example.com"

    async def sign_up(self) -> None:
        # 409: an earlier attempt that timed out had created it (the app retried).
        await self.call("POST", "/v1/accounts", {
            "email": self.email, "password": PASSWORD, "displayName": self.persona.screen_name,
            "residence": "MT", "dateOfBirth": "1990-04-21",
        }, ok=(200, 409))
        await self.log_in()
        await self.deposit()

    async def deposit(self) -> None:
        """:data:`FUNDS` from the sandbox provider (confirmed shortly after, not at once)."""
        await self.call("POST", "/v1/wallet/deposits", {
            "amount": {"minorUnits": str(FUNDS), "currency": "USD"},
            "idempotencyKey": uuid.uuid4().hex, "paymentMethod": "sandbox",
        })

    async def log_in(self) -> None:
        self.token = ""
        session = await self.call("POST", "/v1/sessions",
                                  {"email": self.email, "password": PASSWORD})
        self.account_id, self.token = session["accountId"], session["accessToken"]

    async def available(self) -> int:
        answer = await self.call("GET", "/v1/wallet/balances")
        return sum(int(b["available"]["minorUnits"]) for b in answer.get("balances", [])
                   if b["currency"] == "USD")

    async def funded(self) -> bool:
        return await self.available() >= FUNDS

    async def top_up(self) -> None:
        """Deposit again when what is left would not cover another table, as a player
        with many games (a bot, a disconnecter at six tables) would; back once it landed."""
        async with self.wallet:
            before = await self.available()
            if before >= TOP_UP_BELOW:
                return
            await self.deposit()
            for _ in range(240):  # the sandbox confirms a deposit shortly after it is made
                if await self.available() >= before + FUNDS:
                    return
                await asyncio.sleep(0.25)
            raise SimulationError(f"{self.persona.name}: a top-up never landed")


@dataclass
class Seat:
    player: Player
    dumping: bool  # loses on purpose (the host of a HOST_DUMPS table)
    other: Player
    game_id: str
    partner: Player | None = None  # a consultant's other account, at another table
    silent: bool = False  # a disconnecter who walked away
    plays: int = 0
    reason: str = ""  # how the game ended
    act_at: float = 0.0  # a bot's: when its uniform think time is up (the loop's clock)

    @property
    def role(self) -> Role:
        return self.player.persona.role


async def open_table(host: Player, guest: Player) -> str:
    await asyncio.gather(host.top_up(), guest.top_up())
    table = await host.call("POST", "/v1/tables", {
        "rules": {"kind": "PLAY_KIND_MONEY_GAME",
                  "stake": {"minorUnits": str(STAKE), "currency": "USD"}},
        "idempotencyKey": uuid.uuid4().hex,
    })
    joined = await guest.call("POST", f"/v1/tables/{table['tableId']}:join",
                              {"idempotencyKey": uuid.uuid4().hex})
    game_id: str = joined["gameId"]
    host.games.append(game_id)
    guest.games.append(game_id)
    return game_id


async def play_table(table: Table, players: dict[str, Player]) -> str:
    """Both seats of ``table`` until the game is over; how it ended (``EndReason``)."""
    host, guest = players[table.host], players[table.guest]
    game_id = await open_table(host, guest)
    partner = players[table.concurrent_with] if table.concurrent_with else None
    seats = [Seat(host, table.plan is Plan.HOST_DUMPS, guest, game_id, partner),
             Seat(guest, False, host, game_id)]
    await asyncio.gather(*(_seat_loop(seat) for seat in seats))
    return seats[0].reason


async def _seat_loop(seat: Seat) -> None:
    beats = asyncio.create_task(_heartbeats(seat))  # the app's, the whole game through
    try:
        await _decisions(seat)
    finally:
        beats.cancel()


async def _heartbeats(seat: Seat) -> None:
    """A heartbeat every 2 s until the player walks away (a silent seat sends nothing)."""
    path = f"/v1/games/{seat.game_id}:heartbeat"
    while not seat.silent:
        await seat.player.call("POST", path, {}, ok=(200, 400))
        await asyncio.sleep(2.0)


async def _decisions(seat: Seat) -> None:
    me = seat.player
    path = f"/v1/games/{seat.game_id}"
    await _chat_opening(seat)
    view = await me.call("GET", path)
    for _ in range(MAX_LOOKS):
        me.awaited = view.get("awaitingAccountId") == me.account_id
        if view.get("status") != "GAME_STATUS_IN_PROGRESS":
            me.awaited = False
            # A game cancelled before its first move has no outcome: its status says so.
            seat.reason = view.get("lastOutcome", {}).get("reason", "") or view.get("status", "")
            return
        if me.awaited and not seat.silent:
            await _think(seat, view)
            view = await _act(seat, view)  # the answer is the game's new view
            continue
        # A bot reacts at once (it would follow the game's stream): its think times are
        # its own uniform ones, not the poll's lag; people's apps look every 0.4 s.
        await asyncio.sleep(1.0 if seat.silent else 0.1 if seat.role is Role.BOT else 0.4)
        # gone: the game's disconnection path ends it; the simulator still looks now and then
        view = await (seat.other if seat.silent else me).call("GET", path)
    raise SimulationError(f"{me.persona.name}: game {seat.game_id} never ended")


async def _think(seat: Seat, view: dict[str, Any]) -> None:
    rng = seat.player.rng
    # Think times are a tenth of people's (so a population plays in minutes); only
    # their shape matters: a bot's are uniform, forced or not; a person's grow with
    # the choices and vary a lot, and a double to answer (a hard decision) takes them
    # longer than a checker play (assistance's timing part compares the two).
    if seat.role is Role.BOT:  # its time from seeing its turn to acting (see _pace)
        seat.act_at = asyncio.get_running_loop().time() + rng.uniform(0.3, 0.6)
    elif seat.dumping:
        await asyncio.sleep(0.05)
    elif view["phase"] == "TURN_PHASE_MOVE":
        choices = len(view.get("legalPlays", []))
        await asyncio.sleep(min(2.0, rng.expovariate(1 / (0.05 + 0.02 * choices))))
    elif view["phase"] == "TURN_PHASE_CUBE_RESPONSE":
        await asyncio.sleep(_cube_think(rng))


async def _pace(seat: Seat) -> None:
    """A bot acts when its think time is up, counted from seeing its turn: its own
    computing is instant, but the simulator's net (one thread for every seat) queues,
    and that wait is the simulator's, not the bot's."""
    if seat.role is Role.BOT:
        await asyncio.sleep(max(0.0, seat.act_at - asyncio.get_running_loop().time()))


def _cube_think(rng: random.Random) -> float:
    """A person's time on a cube action: about 1.5 x a typical checker play's."""
    return min(2.0, rng.expovariate(1 / 0.6))


async def _act(seat: Seat, view: dict[str, Any]) -> dict[str, Any]:
    """One decision; the game's view after it. A 409 (another version) or 400 (the game
    moved on: over, being settled) is answered by reading the game again, as an app does."""
    me, phase, path = seat.player, view["phase"], f"/v1/games/{seat.game_id}"
    version = {"expectedVersion": view["version"]}
    answer: dict[str, Any] = {}
    if phase == "TURN_PHASE_RESIGN_RESPONSE":
        await _pace(seat)
        answer = await me.call("POST", f"{path}:acceptResign", version, ok=OK_OR_MOVED_ON)
    elif phase == "TURN_PHASE_CUBE_RESPONSE":
        # One losing on purpose takes every double: hopeless takes give money away.
        drop = not seat.dumping and await _net(cube_action, view) in PASSES
        if drop and _may_walk(seat):  # a disconnecter walks instead of paying the drop
            _walk(seat)
            return view
        await _pace(seat)
        answer = await me.call("POST", f"{path}:{'drop' if drop else 'take'}", version,
                               ok=OK_OR_MOVED_ON)
    elif phase == "TURN_PHASE_ROLL_OR_DOUBLE":
        answer = await _roll_or_double(seat, view, version)
    elif phase == "TURN_PHASE_MOVE":
        notation = await _play(seat, view)
        await _pace(seat)
        answer = await me.call("POST", f"{path}:move", {**version, "notation": notation},
                               ok=OK_OR_MOVED_ON)
        seat.plays += 1
        await _chat_during(seat)
    if "version" not in answer:  # refused: read the game again
        answer = await me.call("GET", path)
    return answer


async def _roll_or_double(seat: Seat, view: dict[str, Any], version: dict[str, Any]
                          ) -> dict[str, Any]:
    me, path = seat.player, f"/v1/games/{seat.game_id}"
    if seat.dumping and seat.plays >= RESIGN_AFTER_PLAYS.get(seat.role, 3):
        return await me.call("POST", f"{path}:resign", {**version, "level": "RESULT_TYPE_GAMMON"},
                             ok=OK_OR_MOVED_ON)
    if seat.plays >= LEAVES_AFTER_PLAYS.get(seat.role, MAX_LOOKS):
        return await me.call("POST", f"{path}:resign", {**version, "level": "RESULT_TYPE_SINGLE"},
                             ok=OK_OR_MOVED_ON)
    if _may_walk(seat) and await _net(cubeful_equity, view) <= WALK_AWAY_AT:
        _walk(seat)
        return view
    owner = view.get("cubeOwnerAccountId", "")
    may_double = owner in ("", me.account_id) and int(view.get("cubeValue", 1)) < MAX_CUBE
    if may_double and not seat.dumping and doubles_on(seat.role, await _net(cube_action, view)):
        if seat.role is not Role.BOT:
            await asyncio.sleep(_cube_think(me.rng))  # a person weighs a double
        await _pace(seat)
        return await me.call("POST", f"{path}:double", version, ok=OK_OR_MOVED_ON)
    await _pace(seat)
    return await me.call("POST", f"{path}:roll", version, ok=OK_OR_MOVED_ON)


def doubles_on(role: Role, action: str) -> bool:
    """Whether a player of ``role`` doubles when the net's cube action is ``action``:
    when the net says so, and a person also when the position is too good."""
    return action in (ENGINE_DOUBLES if role is Role.BOT else DOUBLES)


async def _net(ask: Callable[[str, str], T], view: dict[str, Any]) -> T:
    """The net's answer about the game's position, on the net's thread."""
    return await _on_net_thread(ask, view["positionId"], view["gnubgMatchId"])


async def _on_net_thread(ask: Callable[..., T], *args: Any) -> T:
    """``ask(*args)`` on the one thread that runs the net: the other seats' coroutines
    keep reading and heart-beating meanwhile (a 0-ply ranking of many plays takes a
    while on a loaded machine, and a seat silent too long is disconnected), and the
    net's C code, whose caches are process-wide, never runs on two threads at once."""
    return await asyncio.get_running_loop().run_in_executor(NET_THREAD, ask, *args)


def _may_walk(seat: Seat) -> bool:
    """A disconnecter leaves for good when losing, before rolling (cubeful equity at most
    :data:`WALK_AWAY_AT`) or when doubled in a position it would pass (the settlement
    then values the pass), once past its opening."""
    return seat.role is Role.DISCONNECTER and seat.plays >= WALK_AFTER_PLAYS


def _walk(seat: Seat) -> None:
    seat.silent = True
    seat.player.walks += 1


async def _play(seat: Seat, view: dict[str, Any]) -> str:
    legal = view.get("legalPlays", [])
    if not legal:
        return ""  # no legal play: pass
    by_result = {p["resultPositionId"]: p["notation"] for p in legal}
    dice = (int(view["dice"][0]), int(view["dice"][1]))
    ranked = await _on_net_thread(ranked_options, view["positionId"], view["gnubgMatchId"],
                                  dice)
    options = [o for o in ranked if o.result_position_id in by_result]
    if not options:
        options = [Option(p["resultPositionId"], p["notation"], 0.0) for p in legal]
    # A consultant whose other account is idle (not awaited) has time to consult.
    helped = seat.partner is not None and not seat.partner.awaited
    tau = 0.0 if helped else seat.player.persona.tau
    picked = worst(options) if seat.dumping else choose(options, tau, seat.player.rng)
    notation: str = by_result[picked.result_position_id]
    return notation


async def _say(seat: Seat, text: str) -> None:
    # Moderation refuses abuse with 400 (FAILED_PRECONDITION): refused lines are recorded too.
    await seat.player.call("POST", f"/v1/games/{seat.game_id}/chat", {"text": text},
                           ok=(200, 400, 429))


async def _chat_opening(seat: Seat) -> None:
    rng, role = seat.player.rng, seat.role
    if role is Role.HARASSER:
        await _say(seat, rng.choice(INSULTS))
    elif role is Role.SPAMMER:
        await _say(seat, SPAM[0])
    elif rng.random() < 0.6 and role is not Role.BOT:
        await _say(seat, rng.choice(GREETINGS))


async def _chat_during(seat: Seat) -> None:
    rng, role = seat.player.rng, seat.role
    if role is Role.HARASSER and seat.plays <= LEAVES_AFTER_PLAYS[Role.HARASSER]:
        await _say(seat, rng.choice(INSULTS))
    elif role is Role.SPAMMER and seat.plays in (1, 2, 3, 5, 7):
        await _say(seat, SPAM[seat.plays % len(SPAM)])
    elif role is Role.CONSULTANT and seat.plays in (2, 5):
        await _say(seat, rng.choice(CONSULTING))
    elif rng.random() < 0.04:
        await _say(seat, rng.choice(FRIENDLY))
