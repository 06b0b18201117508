"""Freerolls and added prizes on the real wallet, game and geo services: the house's money
is held for the pool from creation (once, however often the operator retries), the
lobby shows the pool with it, the prize table pays the whole pool, a cancelled event
gives it back to the house, the operator's bound refuses too much, and a freeroll still
asks geo and the self-exclusion copy at registration. Every wallet movement is audited.

Worked by hand:
- 4-seat USD freeroll, added prize 10.01, no buy-in, no fee: the 4-slot row of
  "standard" is 70/30: 1001 x 0.70 = 700.7 -> 700 and 1001 x 0.30 = 300.3 -> 300, one
  cent left to 1st: **7.01 and 3.00**, all from the house's prize fund.
- 2-seat USD Sit & Go, buy-in 5.00, fee 0.50, added prize 10.00: the pool is 2 x 5.00 +
  10.00 = 20.00, the 2-slot row pays 100 % to the winner: 20.00; the fees (1.00) are the
  house's revenue. The winner ends at 30.00 - 5.50 + 20.00 = 44.50, the loser at 24.50.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from services.geo.devdata import FLORIDA_IP
from services.wallet.audit_cli import audit_database
from tavla.tournaments.v1 import tournaments_pb2
from tests.integration.tournaments.conftest import Venue
from tests.integration.tournaments.test_tournaments_scheduled import scheduled
from tests.integration.tournaments.test_tournaments_sit_and_go import (
    finish_round,
    playing,
    register,
)
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.tournaments import (
    get,
    new_player,
    scalar,
    self_excluded,
    sit_and_go,
    wait_until,
)
from tests.support.wallet import balance, fund

HOUSE_PRIZE = 24  # the wallet's code for a prize paid from the house's prize fund


def with_added_prize(
    request: tournaments_pb2.CreateTournamentRequest, added: int, *, freeroll: bool = False
) -> tournaments_pb2.CreateTournamentRequest:
    request.rules.added_prize = added
    if freeroll:
        request.rules.buy_in = 0
        request.rules.entry_fee = 0
        request.name = "Freeroll"
    return request


async def house_holds(venue: Venue, tournament_id: str) -> list[tuple[int, str]]:
    """(amount, status) of the house's holds at the tournament, in the wallet."""
    rows = await scalar(
        venue.wallet_url,
        "SELECT COALESCE(json_agg(json_build_array(amount, status)), '[]') FROM holds "
        "WHERE table_id = :t AND player_id = '~house'",
        t=tournament_id,
    )
    assert isinstance(rows, list)
    return [(amount, status) for amount, status in rows]


async def test_a_freeroll_from_creation_to_payout(venue: Venue, kafka_broker: object) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    request = with_added_prize(sit_and_go(4, buy_in=0, fee=0), 1_001, freeroll=True)
    created = await venue.stub.CreateTournament(request)
    assert await venue.stub.CreateTournament(request) == created  # the operator's retry
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_FREEROLL
    assert [(p.best_place, p.amount.minor_units) for p in created.prize_places] == [
        (1, 701), (2, 300)
    ]
    assert await house_holds(venue, tid) == [(1_001, "open")]  # once, from creation
    assert await audit_database(venue.wallet_url) == ()

    # A freeroll costs nothing, but geo and self-exclusion are asked as for any entry.
    florida, excluded = new_player(), new_player()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.Register(register(tid), metadata=as_player(florida, address=FLORIDA_IP))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "location" in (caught.value.details() or "")
    await publish(bootstrap, [self_excluded(excluded, datetime.now(UTC) + timedelta(days=30))])
    refused = None
    for _ in range(100):
        try:
            await venue.stub.Register(register(tid), metadata=as_player(excluded))
        except grpc.aio.AioRpcError as error:
            refused = error
            break
        await venue.stub.Unregister(  # registered before the exclusion arrived: leave
            tournaments_pb2.UnregisterRequest(tournament_id=tid), metadata=as_player(excluded)
        )
        await asyncio.sleep(0.1)  # the consumer's fetches gather for a second
    assert refused is not None and refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "self-excluded" in (refused.details() or "")
    assert excluded not in (await get(venue.stub, tid, excluded)).entrants

    # Four players with empty wallets take the seats: nothing is held from them.
    players = [new_player() for _ in range(4)]
    for player in players:
        await venue.stub.Register(register(tid), metadata=as_player(player))
        assert await balance(venue.wallet, player) == (0, 0)
    running = await wait_until(venue.stub, tid, players[0], playing(1))
    assert running.prize_pool.minor_units == 1_001
    await finish_round(venue, bootstrap, running, 1)
    final_round = await wait_until(venue.stub, tid, players[0], playing(2))
    await finish_round(venue, bootstrap, final_round, 2)
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    final = finished.bracket[-1]
    champion, runner_up = final.players[0], final.players[1]
    assert await balance(venue.wallet, champion) == (701, 0)  # real money, spendable
    assert await balance(venue.wallet, runner_up) == (300, 0)
    for player in set(players) - {champion, runner_up}:
        assert await balance(venue.wallet, player) == (0, 0)
    prizes = {s.account_id: s.prize.minor_units for s in finished.standings if s.HasField("prize")}
    assert prizes == {champion: 701, runner_up: 300}
    assert await house_holds(venue, tid) == [(1_001, "posted")]
    paid = await scalar(
        venue.wallet_url,
        "SELECT sum(amount) FROM transfers WHERE code = :code AND reference = :ref "
        "AND debit_account_id = 'house_prizes:USD'",
        code=HOUSE_PRIZE, ref=f"table:{tid}",
    )
    assert paid == 1_001
    assert await audit_database(venue.wallet_url) == ()


async def test_an_added_prize_joins_the_buy_ins_and_the_whole_pool_is_paid(
    venue: Venue, kafka_broker: object
) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    created = await venue.stub.CreateTournament(
        with_added_prize(sit_and_go(2, buy_in=500, fee=50), 1_000)
    )
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_SIT_AND_GO
    assert [p.amount.minor_units for p in created.prize_places] == [2_000]
    players = [new_player() for _ in range(2)]
    for player in players:
        await fund(venue.wallet, player, 3_000)
        await venue.stub.Register(register(tid), metadata=as_player(player))
    running = await wait_until(venue.stub, tid, players[0], playing(1))
    assert running.prize_pool.minor_units == 2_000
    await finish_round(venue, bootstrap, running, 1)
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    winner = finished.bracket[-1].winner_account_id
    loser = next(p for p in players if p != winner)
    assert await balance(venue.wallet, winner) == (3_000 - 550 + 2_000, 0)
    assert await balance(venue.wallet, loser) == (3_000 - 550, 0)
    assert await audit_database(venue.wallet_url) == ()


async def test_a_cancelled_freeroll_gives_the_house_its_money_back(venue: Venue) -> None:
    request = with_added_prize(scheduled(3.0, minimum=4), 5_000, freeroll=True)
    created = await venue.stub.CreateTournament(request)
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_FREEROLL
    player = new_player()
    await venue.stub.Register(register(tid), metadata=as_player(player))
    cancelled = await wait_until(
        venue.stub, tid, player,
        lambda t: t.status == tournaments_pb2.STATUS_CANCELLED and t.HasField("finished_at"),
        timeout=30,
    )  # fmt: skip
    assert "below the minimum of 4" in cancelled.cancel_reason
    assert await house_holds(venue, tid) == [(5_000, "voided")]
    assert await audit_database(venue.wallet_url) == ()


async def test_too_much_house_money_and_an_added_prize_to_a_satellite_are_refused(
    venue: Venue,
) -> None:
    # The operator's TAVLA_MONEY_MAX_ADDED_PRIZE_USD is 10,000.00 by default.
    request = with_added_prize(sit_and_go(4, buy_in=0, fee=0), 1_000_001, freeroll=True)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.CreateTournament(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "TAVLA_MONEY_MAX_ADDED_PRIZE_USD" in (caught.value.details() or "")
    in_yen = with_added_prize(sit_and_go(4, buy_in=0, fee=0, currency="JPY"), 500, freeroll=True)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.CreateTournament(in_yen)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not JPY" in (caught.value.details() or "")
    target = await venue.stub.CreateTournament(sit_and_go(8, buy_in=900, fee=100))
    satellite = sit_and_go(4, buy_in=250, fee=25)
    satellite.rules.prize_table = "tickets"
    satellite.rules.target_tournament_id = target.tournament_id
    satellite.rules.added_prize = 100
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.CreateTournament(satellite)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "added_prize" in (caught.value.details() or "")
    created = await scalar(
        venue.url, "SELECT count(*) FROM tournaments WHERE idempotency_key IN (:a, :b)",
        a=request.idempotency_key, b=satellite.idempotency_key,
    )  # fmt: skip
    assert created == 0
    yen = await scalar(
        venue.url, "SELECT count(*) FROM tournaments WHERE idempotency_key = :k",
        k=in_yen.idempotency_key,
    )  # fmt: skip
    assert yen == 0
