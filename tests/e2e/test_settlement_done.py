"""Disconnection settlement end to end: a real-money game abandoned mid-play settles by
analysis end to end on the real stack (`tavla dev`: every service its own `tavla serve`,
the analysis service with its worker pool, PostgreSQL, the broker, Envoy, geo; the
session's shared stack, `dev_stack`).

Two players sign up, deposit sandbox dollars and sit at a $5 money table over REST (from
Malta, as in `test_matchmaking_done`). The opening roll's winner plays, then stops calling;
the other keeps heart-beating. The shared stack's tests-only short windows (five seconds
of silence, a ten-second reconnect window) let the disconnection run out; the game asks the analysis
service for the shares, publishes GameEnded with them and the figures behind them, and the
wallet settles both balances: checked to the cent from the event's shares, by hand with
the commission schedule (GammonEmpire 2026-01: 4.9 % per player up to $20, no rating
increase for two new players at 1500).
"""

from __future__ import annotations

import asyncio
import time
from decimal import ROUND_HALF_UP, Decimal

import httpx

from tavla.game.v1 import events_pb2, game_pb2
from tests.e2e.devstack import DevRun, signed_up
from tests.e2e.test_matchmaking_done import at_malta, deposit, eventually, rules, usd
from tests.support.kafka import first_event

FUNDS = 5_000
GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name


async def game_ended(bootstrap: str, game_id: str) -> events_pb2.GameEnded:
    """The game's GameEnded as the wallet read it: from the broker's ``tavla.game.v1``."""
    record = await first_event(bootstrap, "tavla.game.v1", game_id, GAME_ENDED)
    event = events_pb2.GameEnded()
    event.ParseFromString(record.value)
    return event


def round_half_up(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def by_hand(event: events_pb2.GameEnded, leaver: str) -> tuple[int, int]:
    """(leaver's change, stayer's change) in cents: each side's pot is 3 x stake x cube,
    the leaver's share of both pots comes back, the difference changes hands, and the
    side paid gives the house 4.9 % of it for each player."""
    share = next(Decimal(s.share) for s in event.shares if s.account_id == leaver)
    pot = 3 * event.stake.minor_units * event.cube_value
    to_leaver = round_half_up(pot * (2 * share - 1))
    amount = abs(to_leaver)
    assert amount <= 2000 and all(p.rating < 1550 for p in event.players)
    commission = round_half_up(amount * Decimal("0.049"))
    if to_leaver < 0:
        return -amount, amount - 2 * commission
    return (amount - 2 * commission, -amount) if to_leaver else (0, 0)


def test_an_abandoned_real_money_game_settles_by_analysis_end_to_end(
    dev_stack: DevRun,
) -> None:
    run = dev_stack  # 5 s of silence disconnects, 10 s to come back (conftest.py)
    with httpx.Client(base_url=run.gateway, timeout=30) as client:
        ann, bob = signed_up(client, "ann"), signed_up(client, "bob")
        for player in (ann, bob):
            deposit(client, player, FUNDS)
        table = client.post("/v1/tables", headers=at_malta(ann),
                            json={"rules": rules(), "idempotencyKey": "ann-table"})
        assert table.status_code == 200, table.text
        joined = client.post(f"/v1/tables/{table.json()['tableId']}:join",
                             headers=at_malta(bob), json={"idempotencyKey": "bob-sits"})
        assert joined.status_code == 200, joined.text
        game_id = joined.json()["gameId"]
        players = {p.account_id: p for p in (ann, bob)}

        # The opening roll's winner plays, then goes away for good.
        view = client.get(f"/v1/games/{game_id}", headers=at_malta(ann)).json()
        leaver = players[view["awaitingAccountId"]]
        moved = client.post(f"/v1/games/{game_id}:move", headers=at_malta(leaver), json={
            "expectedVersion": view["version"], "notation": view["legalPlays"][0]["notation"],
        })
        assert moved.status_code == 200, moved.text
        stayer = next(p for p in (ann, bob) if p is not leaver)

        # The stayer keeps heart-beating until the game is settled.
        deadline = time.monotonic() + 90
        while True:
            beat = client.post(f"/v1/games/{game_id}:heartbeat", headers=at_malta(stayer),
                               json={})
            assert beat.status_code == 200, beat.text
            now = client.get(f"/v1/games/{game_id}", headers=at_malta(stayer)).json()
            if now["status"] == "GAME_STATUS_FINISHED":
                break
            assert time.monotonic() < deadline, "the abandoned game was never settled"
            time.sleep(0.3)
        assert now["lastOutcome"]["reason"] == "END_REASON_DISCONNECTION"

        event = asyncio.run(game_ended(run.broker, game_id))
        assert event.reason == game_pb2.END_REASON_DISCONNECTION
        assert event.analysed and event.settlement.method == "neural_net"
        assert event.settlement.plies == 2 and event.settlement.basis
        assert event.settlement.on_roll_account_id == stayer.account_id
        shares = {s.account_id: Decimal(s.share) for s in event.shares}
        assert sum(shares.values()) == 1 and shares[leaver.account_id] != Decimal("0.5")

        leaver_change, stayer_change = by_hand(event, leaver.account_id)
        eventually(lambda: usd(client, leaver) == (FUNDS + leaver_change, 0)
                   and usd(client, stayer) == (FUNDS + stayer_change, 0),
                   "the wallet settling both balances by the analysed shares")
