"""Where a session stopped by a timeout or a resignation is valued, after its settlement.

The game service (in-process, manual clock) and the real analysis service (in-process, a
real worker pool) on PostgreSQL and the broker; play-money tables (the settlement is the
rules' either way: the point of these tests is that the valuation neither changes nor
waits for it). The positions are written into the stored session (the game has no call
that sets one up), as a new version so that no cached copy of the old one is used.

By hand (bear-offs, which the analysis service values exactly):

- the stopper, to roll, has two checkers on their six point (13 off) against one on the
  opponent's ace point (14 off): only 3-3, 4-4, 5-5 and 6-6 bear both off (4 rolls of
  36), any other roll leaves the opponent to bear off theirs: p = 1/9, cubeless equity
  4/36 - 32/36 = -7/9. The analysis service's cubeful money equity is Janowski's
  interpolation (its README; gnubg's Cl2CfMoney) with gnubg's bear-off cube efficiency
  x = 0.6: E = x E_live + (1 - x) E_dead, and with the cube centred and p below the
  opponent's cash point (no gammons: take point 0.2) the live-cube equity is -1, so
  E = 0.6 (-1) + 0.4 (-7/9) = -41/45 = -0.9111; share (1 + E/3) / 2 = 47/135 = 0.3481:
  losing (at most 0.4), the timed-out player's stop;
- the resigner, to roll, has one checker on their ace point against two on the other's
  six point: they win this roll, equity +1, share (1 + 1/3) / 2 = 2/3; valued with the
  offer itself, the resignation would bind them instead (the settlement rule).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from services.game.main import GameSettings
from services.kit.clock import ManualClock
from tavla.game.v1 import events_pb2, game_pb2
from tests.support.analysis import RunningAnalysis, start_analysis
from tests.support.game import GameHandle, as_player, create_request, start_game_service, take_turn
from tests.support.services import free_port, new_database, stop_service

REST = (0,) * 19
ONE_ON_ACE = (1, 0, 0, 0, 0, 0, *REST)
TWO_ON_SIX = (0, 0, 0, 0, 0, 2, *REST)
WAIT = timedelta(seconds=60)
RESERVE = 30.0  # seconds, after a 5-second delay per decision
GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name
STOP_VALUED = events_pb2.StopValued.DESCRIPTOR.full_name


@dataclass
class Stack:
    clock: ManualClock
    game: GameHandle
    url: str


async def sql(url: str, statement: str, *arguments: Any) -> list[Any]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return list(await connection.fetch(statement, *arguments))
    finally:
        await connection.close()


async def build(postgres_server: Any, kafka_broker: Any, analysis_address: str) -> Stack:
    url = postgres_server.url(new_database(postgres_server, "game_stops"))
    clock = ManualClock()
    settings = GameSettings(
        analysis_address=analysis_address,
        analysis_wait_seconds=WAIT.total_seconds(),
        analysis_timeout_seconds=2.0,
    )
    handle = await start_game_service(url, kafka_broker.bootstrap, clock, settings=settings)
    return Stack(clock, handle, url)


@pytest.fixture(scope="module")
async def analysis(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[RunningAnalysis]:
    running = await start_analysis(postgres_server, kafka_broker)
    yield running
    await running.stop()


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any, kafka_broker: Any, analysis: RunningAnalysis
) -> AsyncIterator[Stack]:
    built = await build(postgres_server, kafka_broker, analysis.address)
    yield built
    await stop_service(built.game.running)


@pytest.fixture(scope="module")
async def unreachable(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[Stack]:
    """A game service whose analysis address answers nobody."""
    built = await build(postgres_server, kafka_broker, f"127.0.0.1:{free_port()}")
    yield built
    await stop_service(built.game.running)


async def opened(stack: Stack) -> game_pb2.Game:
    """A play-money game, the opening move played: the other player is to roll."""
    request = create_request(move_delay=5, reserve=RESERVE)
    return await take_turn(stack.game.stub, await stack.game.stub.CreateGame(request))


async def place(
    stack: Stack, game: game_pb2.Game, on_roll: tuple[int, ...], other_side: tuple[int, ...]
) -> game_pb2.Game:
    """The stored session now shows ``on_roll``'s checkers for the player to roll."""
    rows = await sql(stack.url, "SELECT state FROM games WHERE game_id = $1", game.game_id)
    state = json.loads(rows[0]["state"])
    state["game"].update(board=[list(on_roll), list(other_side)], phase="roll", dice=None)
    await sql(
        stack.url,
        "UPDATE games SET state = $2::jsonb, version = version + 1 WHERE game_id = $1",
        game.game_id,
        json.dumps(state),
    )
    request = game_pb2.GetGameRequest(game_id=game.game_id)
    return await stack.game.stub.GetGame(request, metadata=as_player(game.players[0].account_id))


async def facts(stack: Stack, game_id: str) -> list[tuple[str, bytes]]:
    rows = await sql(
        stack.url, "SELECT ce_type, payload FROM outbox WHERE key = $1 ORDER BY seq", game_id
    )
    return [(row["ce_type"], bytes(row["payload"])) for row in rows]


def one(found: list[tuple[str, bytes]], ce_type: str) -> bytes:
    payloads = [payload for kind, payload in found if kind == ce_type]
    assert len(payloads) == 1, f"{len(payloads)} {ce_type}"
    return payloads[0]


def share_of(event: events_pb2.StopValued, account: str) -> Decimal:
    return next(Decimal(s.share) for s in event.shares if s.account_id == account)


async def clock_runs_out(stack: Stack, game: game_pb2.Game) -> str:
    stopper = game.awaiting_account_id
    stack.clock.advance(timedelta(seconds=5 + RESERVE + 1))
    await stack.game.service.fire_due_timers()
    return stopper


async def test_a_timeout_in_a_losing_position_carries_its_valuation(stack: Stack) -> None:
    game = await place(stack, await opened(stack), TWO_ON_SIX, ONE_ON_ACE)
    stopper = await clock_runs_out(stack, game)
    found = await facts(stack, game.game_id)

    ended = events_pb2.GameEnded.FromString(one(found, GAME_ENDED))
    # The settlement is the rules', unchanged: a forfeit of a single game, no shares.
    assert ended.reason == game_pb2.END_REASON_TIMEOUT and ended.loser_account_id == stopper
    assert ended.points == 1 and not ended.shares and not ended.analysed
    assert not ended.HasField("settlement")
    valued = events_pb2.StopValued.FromString(one(found, STOP_VALUED))
    assert [kind for kind, _ in found].index(STOP_VALUED) > [k for k, _ in found].index(GAME_ENDED)
    assert valued.reason == game_pb2.END_REASON_TIMEOUT
    assert valued.account_id == stopper and valued.opponent_account_id == ended.winner_account_id
    assert valued.analysed and valued.settlement.method == "exact"
    assert valued.settlement.on_roll_account_id == stopper
    assert valued.settlement.cubeful_equity == pytest.approx(-41 / 45, abs=1e-6)
    assert share_of(valued, stopper) == pytest.approx(Decimal(47) / 135, abs=Decimal("1e-6"))
    assert valued.position_id == game.position_id
    assert valued.gnubg_match_id == game.gnubg_match_id


async def test_a_resignation_carries_the_valuation_of_the_position_before_the_offer(
    stack: Stack,
) -> None:
    game = await place(stack, await opened(stack), ONE_ON_ACE, TWO_ON_SIX)
    resigner = game.awaiting_account_id
    winner = next(p.account_id for p in game.players if p.account_id != resigner)
    offered = await stack.game.stub.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(resigner),
    )
    over = await stack.game.stub.AcceptResign(
        game_pb2.AcceptResignRequest(game_id=game.game_id, expected_version=offered.version),
        metadata=as_player(winner),
    )
    assert over.status == game_pb2.GAME_STATUS_FINISHED
    before = await facts(stack, game.game_id)
    ended = events_pb2.GameEnded.FromString(one(before, GAME_ENDED))
    assert ended.reason == game_pb2.END_REASON_RESIGNED and ended.points == 1
    assert not ended.shares and not ended.HasField("settlement")
    # The resignation's end is committed and published before anything is valued.
    assert STOP_VALUED not in [kind for kind, _ in before]

    await stack.game.service.fire_due_timers()
    valued = events_pb2.StopValued.FromString(one(await facts(stack, game.game_id), STOP_VALUED))
    assert valued.reason == game_pb2.END_REASON_RESIGNED and valued.account_id == resigner
    assert valued.analysed and valued.settlement.method == "exact"
    assert not valued.settlement.basis.startswith("pending resignation")
    assert share_of(valued, resigner) == pytest.approx(Decimal(2) / 3, abs=Decimal("1e-6"))
    assert valued.position_id == game.position_id  # the board before the offer
    assert valued.gnubg_match_id == game.gnubg_match_id


async def test_unreachable_analysis_delays_only_the_valuation(unreachable: Stack) -> None:
    stack = unreachable
    game = await place(stack, await opened(stack), TWO_ON_SIX, ONE_ON_ACE)
    stopper = await clock_runs_out(stack, game)
    found = await facts(stack, game.game_id)
    ended = events_pb2.GameEnded.FromString(one(found, GAME_ENDED))
    assert ended.reason == game_pb2.END_REASON_TIMEOUT and ended.loser_account_id == stopper
    assert STOP_VALUED not in [kind for kind, _ in found]  # retried, not given up

    stack.clock.advance(WAIT + timedelta(seconds=1))
    await stack.game.service.fire_due_timers()
    valued = events_pb2.StopValued.FromString(one(await facts(stack, game.game_id), STOP_VALUED))
    assert not valued.analysed and valued.settlement.method == "not_analysed"
    assert "after the session ended" in valued.settlement.basis
    assert share_of(valued, stopper) == Decimal("0.5")
