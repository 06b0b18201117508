"""Lobby, queue, seating and ratings end to end, through the gateway only, on the real
stack (`tavla dev`: every service its own `tavla serve`, PostgreSQL, the broker, Envoy,
geo on its dev databases; the session's shared stack, `dev_stack`).

Players sign up, deposit sandbox dollars and play over REST. The gateway believes one
proxy hop (`TAVLA_DEV_XFF_TRUSTED_HOPS=1`) and the players' calls name a Malta address in
X-Forwarded-For: loopback, where the test really is, is a place geo's dev databases do
not know, and real money is refused there. The one thing not done over the gateway is
the anti-abuse verdict: the test publishes PairRestricted on the broker itself, as
anti-abuse does for linked accounts, rather than building the links that make it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from services.geo.devdata import malta_address
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.e2e.devstack import DevRun, SignedUp, signed_up
from tests.support.kafka import publish
from tests.support.matchmaking import verdict_envelope

STAKE = 500  # $5: a money game holds 3 x $5 from each player


def at_malta(player: SignedUp) -> dict[str, str]:
    """The player's calls as the proxy forwards them: from Malta, each player from a /64
    of their own, so anti-abuse does not link strangers who share an address."""
    home = malta_address(int(player.account_id.replace("-", ""), 16) % 0xFFFF + 1)
    return {**player.bearer, "x-forwarded-for": home}


def eventually(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """``check()``'s first truthy answer, polled; a failure naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.25)
    pytest.fail(f"{what}: not seen after {timeout:.0f}s")


def deposit(client: httpx.Client, player: SignedUp, minor: int) -> None:
    made = client.post("/v1/wallet/deposits", headers=at_malta(player), json={
        "amount": {"minorUnits": str(minor), "currency": "USD"},
        "idempotencyKey": uuid.uuid4().hex, "paymentMethod": "sandbox",
    })
    assert made.status_code == 200, made.text
    eventually(lambda: usd(client, player) == (minor, 0), "the sandbox deposit landing")


def usd(client: httpx.Client, player: SignedUp) -> tuple[int, int]:
    """(available, held) in cents."""
    answer = client.get("/v1/wallet/balances", headers=at_malta(player))
    assert answer.status_code == 200, answer.text
    for entry in answer.json()["balances"]:
        if entry["currency"] == "USD":
            return int(entry["available"]["minorUnits"]), int(entry["held"]["minorUnits"])
    return 0, 0


def rules(stake: int = STAKE) -> dict[str, Any]:
    return {"kind": "PLAY_KIND_MONEY_GAME", "stake": {"minorUnits": str(stake), "currency": "USD"}}


def enter_queue(client: httpx.Client, player: SignedUp, stake: int = STAKE) -> httpx.Response:
    return client.post("/v1/queue", headers=at_malta(player),
                       json={"rules": rules(stake), "idempotencyKey": uuid.uuid4().hex})


def ticket(client: httpx.Client, player: SignedUp, ticket_id: str) -> dict[str, Any]:
    answer = client.get(f"/v1/queue/{ticket_id}", headers=at_malta(player))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def resign_and_accept(client: httpx.Client, loser: SignedUp, winner: SignedUp,
                      game_id: str) -> None:
    """The quickest end of a game: one player resigns a single game, the other accepts."""
    view = client.get(f"/v1/games/{game_id}", headers=at_malta(loser))
    assert view.status_code == 200, view.text
    offered = client.post(f"/v1/games/{game_id}:resign", headers=at_malta(loser), json={
        "expectedVersion": view.json()["version"], "level": "RESULT_TYPE_SINGLE",
    })
    assert offered.status_code == 200, offered.text
    accepted = client.post(f"/v1/games/{game_id}:acceptResign", headers=at_malta(winner),
                           json={"expectedVersion": offered.json()["version"]})
    assert accepted.status_code == 200, accepted.text


def rating(client: httpx.Client, viewer: SignedUp, account_id: str) -> dict[str, Any]:
    answer = client.get(f"/v1/ratings/{account_id}", headers=at_malta(viewer))
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


def test_players_meet_play_for_money_move_their_ratings_and_forbidden_pairs_never_sit(
    dev_stack: DevRun,
) -> None:
    run = dev_stack  # believes one X-Forwarded-For hop; queue waves every 0.5 s
    with httpx.Client(base_url=run.gateway, timeout=30) as client:
        names = ("ann", "bob", "cat", "dan", "eve", "fay", "gus")
        ann, bob, cat, dan, eve, fay, gus = (signed_up(client, n) for n in names)
        # Fay and gus are linked accounts: the verdict goes out first, so matchmaking has
        # applied it long before they try to sit together at the end.
        restricted = antiabuse_events.PairRestricted(
            restriction_id=f"e2e-{uuid.uuid4().hex[:8]}",
            account_id=fay.account_id,
            other_account_id=gus.account_id,
            reason=antiabuse_events.PAIR_RESTRICTION_REASON_LINKED_ACCOUNTS,
            detail="one device for both",
        )
        asyncio.run(publish(run.broker, [verdict_envelope(restricted)], keys=run.service_keys))
        for player in (ann, bob, cat, dan, fay, gus):
            deposit(client, player, 5_000)
        deposit(client, eve, 1_000)  # $10: short of the $15 a $5 money game holds

        # Through the queue: ann and bob find each other; the game holds both stakes.
        first = enter_queue(client, ann)
        assert first.status_code == 200, first.text
        second = enter_queue(client, bob)
        assert second.status_code == 200, second.text
        matched = eventually(
            lambda: (t := ticket(client, ann, first.json()["ticketId"]))["status"]
            == "TICKET_STATUS_MATCHED" and t,
            "ann's ticket matched",
        )
        assert matched["opponentAccountId"] == bob.account_id and matched["gameId"]
        assert matched["commission"]["commissionPerPlayer"]["currency"] == "USD"
        for player in (ann, bob):
            assert usd(client, player) == (5_000 - 3 * STAKE, 3 * STAKE)

        # The game ends (bob resigns a single game, ann accepts): both ratings move by
        # the formula. By hand: 1500 v 1500, experience 0 (K = 5), n = 1, D = 0, so
        # P_upset = 1/(10^0 + 1) = 1/2 and each moves 4 x 5 x 1 x 1/2 = 10 points.
        resign_and_accept(client, bob, ann, matched["gameId"])
        eventually(lambda: rating(client, ann, ann.account_id)["experience"] == 1,
                   "ann's rating moved")
        assert rating(client, ann, ann.account_id)["rating"] == 1510.0
        assert eventually(lambda: rating(client, ann, bob.account_id)["experience"] == 1,
                          "bob's rating moved")
        assert rating(client, ann, bob.account_id)["rating"] == 1490.0
        board = client.get("/v1/leaderboard?limit=100", headers=at_malta(cat))
        assert board.status_code == 200, board.text
        listed = board.json()["entries"]
        entries = {e["accountId"]: (e["rating"], e["rank"]) for e in listed}

        def rank_of(rating: float) -> int:
            """Competition rank: 1 + the players rated higher (other tests' players
            share the stack, so ann need not be first)."""
            return 1 + sum(1 for e in listed if e["rating"] > rating)

        assert entries[ann.account_id] == (1510.0, rank_of(1510.0))
        assert entries[bob.account_id] == (1490.0, rank_of(1490.0))
        assert entries[ann.account_id][1] < entries[bob.account_id][1]

        # Through the lobby: cat opens a real-money table, dan sits; both holds, a game.
        table = client.post("/v1/tables", headers=at_malta(cat),
                            json={"rules": rules(), "idempotencyKey": "cat-table"})
        assert table.status_code == 200, table.text
        joined = client.post(f"/v1/tables/{table.json()['tableId']}:join",
                             headers=at_malta(dan), json={"idempotencyKey": "dan-sits"})
        assert joined.status_code == 200, joined.text
        assert joined.json()["status"] == "TABLE_STATUS_PLAYING" and joined.json()["gameId"]
        for player in (cat, dan):
            assert usd(client, player) == (5_000 - 3 * STAKE, 3 * STAKE)

        # A player who cannot cover is refused: at the queue, and at a table.
        poor = enter_queue(client, eve)
        assert poor.status_code == 400 and "you cannot cover" in poor.text, poor.text
        other = client.post("/v1/tables", headers=at_malta(ann),
                            json={"rules": rules(), "idempotencyKey": "ann-second"})
        assert other.status_code == 200, other.text
        refused = client.post(f"/v1/tables/{other.json()['tableId']}:join",
                              headers=at_malta(eve), json={"idempotencyKey": "eve-sits"})
        assert refused.status_code == 400 and "you cannot cover" in refused.text, refused.text
        assert usd(client, eve) == (1_000, 0)

        # A forbidden pair never sits: not at a table, and never paired by the queue.
        own = client.post("/v1/tables", headers=at_malta(fay),
                          json={"rules": rules(), "idempotencyKey": "fay-table"})
        assert own.status_code == 200, own.text
        linked = client.post(f"/v1/tables/{own.json()['tableId']}:join",
                             headers=at_malta(gus), json={"idempotencyKey": "gus-sits"})
        assert linked.status_code == 400, linked.text
        assert "your accounts are linked" in linked.text, linked.text
        close = client.post(f"/v1/tables/{own.json()['tableId']}:close",
                            headers=at_malta(fay), json={})
        assert close.status_code == 200, close.text
        tickets = {p.account_id: enter_queue(client, p, stake=300) for p in (fay, gus)}
        for answer in tickets.values():
            assert answer.status_code == 200, answer.text
        time.sleep(4)  # eight waves at 0.5 s
        for player in (fay, gus):
            waiting = ticket(client, player, tickets[player.account_id].json()["ticketId"])
            assert waiting["status"] == "TICKET_STATUS_WAITING", waiting
            assert usd(client, player) == (5_000, 0)  # nothing held
        for player in (fay, gus):  # no waiting ticket left for a later test to meet
            ticket_id = tickets[player.account_id].json()["ticketId"]
            left = client.delete(f"/v1/queue/{ticket_id}", headers=at_malta(player))
            assert left.status_code == 200, left.text
