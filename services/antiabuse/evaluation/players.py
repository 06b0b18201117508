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
from dataclasses import dataclass, field
from typing import Any

import httpx

from services.antiabuse.evaluation.population import Persona, Plan, Role, Table
from services.antiabuse.evaluation.skill import Option, choose, ranked_options, worst
from services.geo.devdata import malta_address

PASSWORD = "correct horse battery staple"
STAKE = 500  # $5 a point: a money game holds 3 x $5 of each player
FUNDS = 20_000  # $200 each
FRIENDLY = ["gl", "good luck, have fun", "nice roll", "well played", "gg", "thanks, you too"]
INSULTS = ["you are a fucking idiot", "shut up you stupid moron", "go to hell you bastard",
           "what a piece of shit player", "fuck off loser"]
SPAM = ["cheap chips at http://chips.example.com", "visit www.bgbonus.example for free money",
        "DM me for a deposit bonus, send money to my account",
        "cheap chips at http://chips.example.com"]
CONSULTING = ["what should I play at the other table?", "at my other table I rolled 6-5",
              "on another game: play 13/7 8/7 there"]


class SimulationError(RuntimeError):
    """A call the simulator needed was refused: the population could not be played."""


@dataclass
class Player:
    persona: Persona
    client: httpx.AsyncClient
    account_id: str = ""
    token: str = ""
    rng: random.Random = field(default_factory=random.Random)

    def headers(self) -> dict[str, str]:
        headers = {"x-forwarded-for": malta_address(self.persona.address),
                   "x-tavla-device-id": self.persona.device}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        return headers

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None,
                   ok: tuple[int, ...] = (200,)) -> dict[str, Any]:
        for attempt in range(6):
            answer = await self.client.request(method, path, json=body, headers=self.headers())
            if answer.status_code == 429 or answer.status_code >= 500:
                await asyncio.sleep(0.5 * (attempt + 1))  # rate limited or overloaded
                continue
            break
        if answer.status_code not in ok:
            raise SimulationError(f"{self.persona.name}: {method} {path}: "
                                  f"{answer.status_code} {answer.text[:300]}")
        found: dict[str, Any] = answer.json() if answer.content else {}
        return found

    async def sign_up(self) -> None:
        email = f"{self.persona.name}@sim.example.com"
        created = await self.call("POST", "/v1/accounts", {
            "email": email, "password": PASSWORD, "displayName": self.persona.name,
            "residence": "MT", "dateOfBirth": "1990-04-21",
        })
        self.account_id = created["accountId"]
        session = await self.call("POST", "/v1/sessions", {"email": email, "password": PASSWORD})
        self.token = session["accessToken"]
        await self.call("POST", "/v1/wallet/deposits", {
            "amount": {"minorUnits": str(FUNDS), "currency": "USD"},
            "idempotencyKey": uuid.uuid4().hex, "paymentMethod": "sandbox",
        })

    async def funded(self) -> bool:
        answer = await self.call("GET", "/v1/wallet/balances")
        return any(b["currency"] == "USD" and int(b["available"]["minorUnits"]) >= FUNDS
                   for b in answer.get("balances", []))


@dataclass
class Seat:
    player: Player
    dumping: bool  # loses on purpose (the host of a HOST_DUMPS table)
    other: Player
    game_id: str
    silent: bool = False  # a disconnecter who walked away
    plays: int = 0

    @property
    def role(self) -> Role:
        return self.player.persona.role


async def open_table(host: Player, guest: Player) -> str:
    table = await host.call("POST", "/v1/tables", {
        "rules": {"kind": "PLAY_KIND_MONEY_GAME",
                  "stake": {"minorUnits": str(STAKE), "currency": "USD"}},
        "idempotencyKey": uuid.uuid4().hex,
    })
    joined = await guest.call("POST", f"/v1/tables/{table['tableId']}:join",
                              {"idempotencyKey": uuid.uuid4().hex})
    game_id: str = joined["gameId"]
    return game_id


async def play_table(table: Table, players: dict[str, Player]) -> str:
    """Both seats of ``table`` until the game is over; its game id."""
    host, guest = players[table.host], players[table.guest]
    game_id = await open_table(host, guest)
    seats = [Seat(host, table.plan is Plan.HOST_DUMPS, guest, game_id),
             Seat(guest, False, host, game_id)]
    await asyncio.gather(*(_seat_loop(seat) for seat in seats))
    return game_id


async def _seat_loop(seat: Seat) -> None:
    me = seat.player
    path = f"/v1/games/{seat.game_id}"
    await _chat_opening(seat)
    while True:
        if seat.silent:  # gone: the game's disconnection path ends it; look now and then
            await asyncio.sleep(1.0)
            view = await seat.other.call("GET", path)
        else:
            view = await me.call("GET", path)
        if view.get("status") != "GAME_STATUS_IN_PROGRESS":
            return
        if seat.silent or view.get("awaitingAccountId") != me.account_id:
            if not seat.silent:
                await me.call("POST", f"{path}:heartbeat", {})
            await asyncio.sleep(0.3)
            continue
        await _think(seat, view)
        await _act(seat, view)


async def _think(seat: Seat, view: dict[str, Any]) -> None:
    rng = seat.player.rng
    if seat.role is Role.BOT:  # uniform think times, forced play or not
        await asyncio.sleep(rng.uniform(1.0, 2.0))
    elif seat.dumping:
        await asyncio.sleep(0.05)
    else:  # people think longer when there is more to think about
        choices = len(view.get("legalPlays", []))
        await asyncio.sleep(min(2.5, rng.expovariate(1 / (0.15 + 0.03 * choices))))


async def _act(seat: Seat, view: dict[str, Any]) -> None:
    me, phase, path = seat.player, view["phase"], f"/v1/games/{seat.game_id}"
    version = {"expectedVersion": view["version"]}
    if phase == "TURN_PHASE_RESIGN_RESPONSE":
        await me.call("POST", f"{path}:acceptResign", version, ok=(200, 400, 409))
    elif phase == "TURN_PHASE_CUBE_RESPONSE":
        await me.call("POST", f"{path}:take", version, ok=(200, 400, 409))
    elif phase == "TURN_PHASE_ROLL_OR_DOUBLE":
        if seat.dumping and seat.plays >= 3:
            await me.call("POST", f"{path}:resign", {**version, "level": "RESULT_TYPE_GAMMON"},
                          ok=(200, 400, 409))
            return
        if _walks_away(seat, view):
            seat.silent = True
            return
        await me.call("POST", f"{path}:roll", version, ok=(200, 409))
    elif phase == "TURN_PHASE_MOVE":
        await me.call("POST", f"{path}:move", {**version, "notation": _play(seat, view)},
                      ok=(200, 409))
        seat.plays += 1
        await _chat_during(seat)


def _walks_away(seat: Seat, view: dict[str, Any]) -> bool:
    """A disconnecter leaves for good once clearly behind in the race (a losing position)."""
    if seat.role is not Role.DISCONNECTER or seat.plays < 6:
        return False
    pips = {p["accountId"]: int(p.get("pipCount", 0)) for p in view["players"]}
    return pips[seat.player.account_id] - pips[seat.other.account_id] >= 15


def _play(seat: Seat, view: dict[str, Any]) -> str:
    legal = view.get("legalPlays", [])
    if not legal:
        return ""  # no legal play: pass
    by_result = {p["resultPositionId"]: p["notation"] for p in legal}
    dice = (int(view["dice"][0]), int(view["dice"][1]))
    options = [o for o in ranked_options(view["positionId"], view["gnubgMatchId"], dice)
               if o.result_position_id in by_result]
    if not options:
        options = [Option(p["resultPositionId"], p["notation"], 0.0) for p in legal]
    picked = worst(options) if seat.dumping else choose(options, seat.player.persona.tau,
                                                        seat.player.rng)
    return by_result[picked.result_position_id]


async def _say(seat: Seat, text: str) -> None:
    # Moderation refuses abuse with 400 (FAILED_PRECONDITION): refused lines are recorded too.
    await seat.player.call("POST", f"/v1/games/{seat.game_id}/chat", {"text": text},
                           ok=(200, 400, 429))


async def _chat_opening(seat: Seat) -> None:
    if seat.player.rng.random() < 0.6 and seat.role is not Role.BOT:
        await _say(seat, seat.player.rng.choice(FRIENDLY[:2]))


async def _chat_during(seat: Seat) -> None:
    rng, role = seat.player.rng, seat.role
    if role is Role.HARASSER and seat.plays in (2, 4, 6, 8):
        await _say(seat, rng.choice(INSULTS))
    elif role is Role.SPAMMER and seat.plays in (1, 2, 3, 5, 7):
        await _say(seat, SPAM[seat.plays % len(SPAM)])
    elif role is Role.CONSULTANT and seat.plays in (2, 5):
        await _say(seat, rng.choice(CONSULTING))
    elif rng.random() < 0.04:
        await _say(seat, rng.choice(FRIENDLY[2:]))
