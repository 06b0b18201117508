"""Disconnection settlements by the real analysis service, paid by the real wallet.

The game service (in-process, on a manual clock) settles real-money games whose player
went silent past the reconnect window; the analysis service (in-process, a real pool of
worker processes) gives the shares over gRPC; the wallet (in-process) settles from the
game's GameEnded on the broker; geo locates the players (Malta). All on PostgreSQL.

Positions: contact, dice rolled, a pending double and a pending resignation arise from
play (the opening move, then a roll, a double or an offer); a race and a bear-off are
written into the stored session while the leaver is away (the game has no call that sets
a position up). Every settlement must be the
analysis service's answer for that position; the bear-off one is also derived by hand:
the player on roll has one checker on the ace point against one on the six point, so
wins this roll, a single game (the other has borne off 14): equity +1, share
(1 + 1/3) / 2 = 2/3 of the pot of 3 x stake each; the leaver keeps 1/3, so pays
exactly the stake (500 cents), less nothing, and the stayer is credited 500 less the
commission on 500 (4.9 % each for both players rated 1500, GammonEmpire's schedule:
25 cents each), 450. So is a pending resignation: the leaver offered a single game and
left; accepting (+1) beats playing on from the opening, so again 2/3 and the stake paid.
A 3-point match settles by the chance of winning it (the analysis service's MWC), the
wallet splitting the match stake with the series rate (5.9 %) by hand.

The fallback: an analysis service that cannot be reached is retried until
``analysis_wait`` has passed since the window closed, then the even split marked "not
analysed"; reached again within the wait, the settlement is analysed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from services.backgammon import match_id, position_id
from services.backgammon.board import Board
from services.backgammon.match_id import MatchIdState
from services.game.main import GameSettings
from services.kit.clock import ManualClock
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tavla.game.v1 import events_pb2, game_pb2
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.analysis import RunningAnalysis, start_analysis
from tests.support.game import GameHandle, as_player, create_request, start_game_service, take_turn
from tests.support.services import RunningService, free_port, new_database, stop_service
from tests.support.wallet import balance, fund, place_hold, start_wallet

STAKE = 500  # cents per point: a money game holds 3 x 500 from each player
FUNDS = 20_000
WINDOW = timedelta(minutes=5)  # the house's reconnect window (the default)
WAIT = timedelta(seconds=60)
GAME_ENDED = events_pb2.GameEnded.DESCRIPTOR.full_name

REST = (0,) * 19
ONE_ON_ACE = (1, 0, 0, 0, 0, 0, *REST)
ONE_ON_SIX = (0, 0, 0, 0, 0, 1, *REST)
# A race with checkers still outside both home boards (points 8 and 10 of each side).
RACE_ON_ROLL = (0, 0, 0, 2, 3, 5, 0, 3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
RACE_OTHER = (0, 0, 2, 3, 3, 4, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)


@dataclass
class Stack:
    clock: ManualClock
    game: GameHandle
    game_url: str
    wallet: Any  # WalletServiceStub
    analysis: analysis_pb2_grpc.AnalysisServiceStub


@pytest.fixture(scope="module")
async def analysis(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[RunningAnalysis]:
    running = await start_analysis(postgres_server, kafka_broker)
    yield running
    await running.stop()


@pytest.fixture(scope="module")
async def wallet(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[RunningService]:
    url = postgres_server.url(new_database(postgres_server, "wallet_settle"))
    running = await start_wallet(url, kafka_broker.bootstrap, geo_address=geo_service.address)
    yield running
    await stop_service(running)


async def game_stack(
    postgres_server: Any,
    kafka_broker: Any,
    geo_service: RunningService,
    wallet: RunningService,
    analysis_address: str,
) -> Stack:
    url = postgres_server.url(new_database(postgres_server, "game_settle"))
    clock = ManualClock()
    settings = GameSettings(
        wallet_address=wallet.address,
        analysis_address=analysis_address,
        analysis_wait_seconds=WAIT.total_seconds(),
        analysis_timeout_seconds=2.0,
    )
    handle = await start_game_service(
        url, kafka_broker.bootstrap, clock, geo_address=geo_service.address, settings=settings
    )
    return Stack(
        clock,
        handle,
        url,
        wallet_pb2_grpc.WalletServiceStub(wallet.channel),
        analysis_pb2_grpc.AnalysisServiceStub(wallet.channel),  # replaced by callers
    )


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any,
    kafka_broker: Any,
    geo_service: RunningService,
    wallet: RunningService,
    analysis: RunningAnalysis,
) -> AsyncIterator[Stack]:
    built = await game_stack(postgres_server, kafka_broker, geo_service, wallet, analysis.address)
    built.analysis = analysis_pb2_grpc.AnalysisServiceStub(analysis.running.channel)
    yield built
    await stop_service(built.game.running)


# ------------------------------------------------------------------ the game's side


async def new_game(stack: Stack, match_length: int = 0) -> game_pb2.Game:
    """A USD money game (or match) with both stakes held, the opening move played: the
    other player is to roll (the "stayer"), the one who moved will go silent (the
    "leaver")."""
    request = create_request(
        match_length=match_length, stake=STAKE, currency="USD", move_delay=600, reserve=3600
    )
    held = STAKE if match_length else 3 * STAKE
    for player in request.players:
        await fund(stack.wallet, player.account_id, FUNDS)
        hold = await place_hold(stack.wallet, player.account_id, held, request.table_id)
        player.hold_id = hold.hold_id
    game = await stack.game.stub.CreateGame(request)
    return await take_turn(stack.game.stub, game)


def other(game: game_pb2.Game, account: str) -> str:
    return next(p.account_id for p in game.players if p.account_id != account)


async def goes_silent(stack: Stack, game: game_pb2.Game, leaver: str) -> None:
    """The leaver stops heart-beating; the stayer goes on: the leaver is disconnected."""
    stack.clock.advance(timedelta(seconds=20))
    await stack.game.stub.Heartbeat(
        game_pb2.HeartbeatRequest(game_id=game.game_id), metadata=as_player(other(game, leaver))
    )
    await stack.game.service.sweep_presence()


async def window_passes(stack: Stack, extra: timedelta = timedelta(seconds=1)) -> None:
    stack.clock.advance(WINDOW + extra)
    await stack.game.service.fire_due_timers()


async def sql(url: str, statement: str, *arguments: Any) -> list[Any]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        return list(await connection.fetch(statement, *arguments))
    finally:
        await connection.close()


async def place(
    stack: Stack, game_id: str, turn: int, on_roll: tuple[int, ...], other_side: tuple[int, ...]
) -> None:
    """The stored session now shows ``on_roll``'s checkers for player ``turn``, to roll."""
    rows = await sql(stack.game_url, "SELECT state FROM games WHERE game_id = $1", game_id)
    state = json.loads(rows[0]["state"])
    state["game"].update(
        board=[list(on_roll), list(other_side)], turn=turn, phase="roll", dice=None, resign=None
    )
    await sql(
        stack.game_url,
        "UPDATE games SET state = $2::jsonb WHERE game_id = $1",
        game_id,
        json.dumps(state),
    )


async def ended(stack: Stack, game_id: str) -> events_pb2.GameEnded:
    rows = await sql(
        stack.game_url,
        "SELECT payload FROM outbox WHERE key = $1 AND ce_type = $2",
        game_id,
        GAME_ENDED,
    )
    assert len(rows) == 1, f"{len(rows)} GameEnded for game {game_id}"
    event = events_pb2.GameEnded()
    event.ParseFromString(rows[0]["payload"])
    assert event.reason == game_pb2.END_REASON_DISCONNECTION
    return event


def share_of(event: events_pb2.GameEnded, account: str) -> Decimal:
    return next(Decimal(s.share) for s in event.shares if s.account_id == account)


async def analysed_share(stack: Stack, pid: str, mid: str) -> Decimal:
    """The analysis service's own answer: the on-roll player's share."""
    answer = await stack.analysis.SettlementShares(
        analysis_pb2.SettlementSharesRequest(position_id=pid, gnubg_match_id=mid)
    )
    return Decimal(answer.on_roll_share)


# ------------------------------------------------------------------ the wallet's side


def round_half_up(value: Decimal) -> int:
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def paid(event: events_pb2.GameEnded, leaver: str) -> tuple[int, int]:
    """(leaver's change, stayer's change) in cents, by hand from the event's shares: each
    puts in 3 x stake x cube, the difference from an even split changes hands, the one
    paid gives the house 4.9 % of it per player (both rated 1500; amounts up to $20)."""
    pot = 3 * STAKE * event.cube_value
    to_leaver = round_half_up(pot * (2 * share_of(event, leaver) - 1))
    amount = abs(to_leaver)
    assert amount <= 2000  # the schedule's first band
    commission = round_half_up(amount * Decimal("0.049"))
    if to_leaver < 0:
        return -amount, amount - 2 * commission
    if to_leaver > 0:
        return amount - 2 * commission, -amount
    return 0, 0


async def wallet_settles(stack: Stack, event: events_pb2.GameEnded, leaver: str) -> None:
    leaver_change, stayer_change = paid(event, leaver)
    stayer = next(p.account_id for p in event.players if p.account_id != leaver)
    expected = {leaver: (FUNDS + leaver_change, 0), stayer: (FUNDS + stayer_change, 0)}
    seen: dict[str, tuple[int, int]] = {}
    async with asyncio.timeout(90):  # the wallet settles from GameEnded on the broker
        while seen != expected:
            seen = {a: await balance(stack.wallet, a) for a in expected}
            await asyncio.sleep(0.2)


# ------------------------------------------------------------------ the tests


async def test_a_contact_position_settles_by_the_analysis_service(stack: Stack) -> None:
    game = await new_game(stack)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)
    expected = await analysed_share(stack, game.position_id, game.gnubg_match_id)
    await goes_silent(stack, game, leaver)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.method == "neural_net"
    assert event.settlement.basis == "cubeful equity before the roll"
    assert event.settlement.plies == 2
    assert event.settlement.on_roll_account_id == stayer
    assert share_of(event, stayer) == expected
    assert share_of(event, leaver) == 1 - expected
    await wallet_settles(stack, event, leaver)


async def test_a_pending_double_settles_at_the_doubled_players_better_answer(
    stack: Stack,
) -> None:
    game = await new_game(stack)
    doubler = game.awaiting_account_id
    leaver = other(game, doubler)  # doubled, then gone
    offered = await stack.game.stub.Double(
        game_pb2.DoubleRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(doubler),
    )
    assert offered.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE
    expected = await analysed_share(stack, offered.position_id, offered.gnubg_match_id)
    await goes_silent(stack, game, leaver)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.method == "neural_net"
    assert event.settlement.basis.startswith("pending double")
    # The Match ID's side on roll is the doubler; the figures are theirs.
    assert event.settlement.on_roll_account_id == doubler
    assert share_of(event, event.settlement.on_roll_account_id) == expected
    assert event.cube_value == 1  # not taken: the pot stays at the cube before the double
    await wallet_settles(stack, event, leaver)


async def test_dice_rolled_settle_at_the_best_play(stack: Stack) -> None:
    game = await new_game(stack)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)
    rolled = await stack.game.stub.Roll(
        game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version),
        metadata=as_player(stayer),
    )
    assert rolled.phase == game_pb2.TURN_PHASE_MOVE  # after one move every roll plays
    expected = await analysed_share(stack, rolled.position_id, rolled.gnubg_match_id)
    await goes_silent(stack, game, leaver)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.basis == "the best play of the dice rolled"
    assert share_of(event, stayer) == expected
    await wallet_settles(stack, event, leaver)


async def test_a_race_settles_by_the_analysis_service(stack: Stack) -> None:
    game = await new_game(stack)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)
    await goes_silent(stack, game, leaver)
    turn = [p.account_id for p in game.players].index(stayer)
    await place(stack, game.game_id, turn, RACE_ON_ROLL, RACE_OTHER)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.method == "neural_net"
    race = position_id.encode(Board(RACE_ON_ROLL, RACE_OTHER))
    centred = match_id.encode(MatchIdState(on_roll=turn, turn=turn))
    assert share_of(event, stayer) == await analysed_share(stack, race, centred)
    await wallet_settles(stack, event, leaver)


async def test_a_leaver_in_a_lost_bear_off_gets_a_third_not_half(stack: Stack) -> None:
    game = await new_game(stack)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)
    await goes_silent(stack, game, leaver)
    turn = [p.account_id for p in game.players].index(stayer)
    await place(stack, game.game_id, turn, ONE_ON_ACE, ONE_ON_SIX)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.method == "exact"
    assert event.settlement.cubeful_equity == pytest.approx(1.0)
    # By hand: the stayer wins this roll, a single game: (1 + 1/3) / 2.
    assert share_of(event, stayer) == pytest.approx(Decimal(2) / 3, abs=Decimal("1e-6"))
    assert share_of(event, leaver) == pytest.approx(Decimal(1) / 3, abs=Decimal("1e-6"))
    assert event.winner_account_id == stayer
    assert paid(event, leaver) == (-500, 450)  # the stake lost, as if played out
    await wallet_settles(stack, event, leaver)


async def test_a_pending_resignation_binds_the_leaver_who_offered_it(stack: Stack) -> None:
    game = await new_game(stack)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)  # offers a single game, then goes
    offered = await stack.game.stub.Resign(
        game_pb2.ResignRequest(
            game_id=game.game_id, expected_version=game.version, level=game_pb2.RESULT_TYPE_SINGLE
        ),
        metadata=as_player(leaver),
    )
    assert offered.phase == game_pb2.TURN_PHASE_RESIGN_RESPONSE
    await goes_silent(stack, game, leaver)
    await window_passes(stack)

    event = await ended(stack, game.game_id)
    assert event.analysed and event.settlement.basis.startswith("pending resignation")
    # By hand: accepting is worth +1 to the stayer, more than playing on from the opening
    # (about 0), so the stayer gets (1 + 1/3) / 2 and the leaver pays the single game.
    assert share_of(event, stayer) == pytest.approx(Decimal(2) / 3, abs=Decimal("1e-6"))
    assert paid(event, leaver) == (-500, 450)
    await wallet_settles(stack, event, leaver)


async def test_a_match_settles_by_the_chance_of_winning_it(stack: Stack) -> None:
    game = await new_game(stack, match_length=3)
    stayer = game.awaiting_account_id
    leaver = other(game, stayer)
    answer = await stack.analysis.SettlementShares(
        analysis_pb2.SettlementSharesRequest(
            position_id=game.position_id, gnubg_match_id=game.gnubg_match_id
        )
    )
    await goes_silent(stack, game, leaver)
    await window_passes(stack)

    rows = await sql(
        stack.game_url,
        "SELECT payload FROM outbox WHERE key = $1 AND ce_type = $2",
        game.game_id,
        events_pb2.MatchEnded.DESCRIPTOR.full_name,
    )
    (row,) = rows
    event = events_pb2.MatchEnded()
    event.ParseFromString(row["payload"])
    assert event.reason == game_pb2.END_REASON_DISCONNECTION and event.analysed
    assert event.settlement.method == "neural_net"
    assert event.settlement.match_winning_chance == pytest.approx(answer.match_winning_chance)
    stayer_share = next(Decimal(s.share) for s in event.shares if s.account_id == stayer)
    assert stayer_share == Decimal(answer.on_roll_share)
    # By hand: each puts in the match stake; the difference from an even split changes
    # hands, with the series rate for $5 over 3 points: 4.9 % + 2 x 0.5 % = 5.9 % each.
    to_stayer = round_half_up(STAKE * (2 * stayer_share - 1))
    amount = abs(to_stayer)
    commission = round_half_up(amount * Decimal("0.059"))
    change = amount - 2 * commission
    expected = (
        {stayer: FUNDS + change, leaver: FUNDS - amount}
        if to_stayer > 0
        else {stayer: FUNDS - amount, leaver: FUNDS + change}
    )
    seen: dict[str, int] = {}
    async with asyncio.timeout(90):
        while seen != expected:
            seen = {}
            for account in expected:
                available, held = await balance(stack.wallet, account)
                seen[account] = available if held == 0 else -1
            await asyncio.sleep(0.2)


# ------------------------------------------------------------------ the fallback


async def test_unreachable_beyond_the_wait_splits_evenly_not_analysed(
    postgres_server: Any,
    kafka_broker: Any,
    geo_service: RunningService,
    wallet: RunningService,
) -> None:
    nowhere = f"127.0.0.1:{free_port()}"
    stack = await game_stack(postgres_server, kafka_broker, geo_service, wallet, nowhere)
    try:
        game = await new_game(stack)
        leaver = other(game, game.awaiting_account_id)
        await goes_silent(stack, game, leaver)
        await window_passes(stack)
        assert await waiting_settlements(stack) == 1  # still due, retried later
        assert await ended_count(stack, game.game_id) == 0
        stack.clock.advance(WAIT - timedelta(seconds=5))
        await stack.game.service.fire_due_timers()
        assert await ended_count(stack, game.game_id) == 0  # within the wait: no split
        stack.clock.advance(timedelta(seconds=10))
        await stack.game.service.fire_due_timers()

        event = await ended(stack, game.game_id)
        assert not event.analysed and event.settlement.method == "not_analysed"
        assert "could not be reached" in event.settlement.basis
        assert [s.share for s in event.shares] == ["0.5", "0.5"]
        assert await waiting_settlements(stack) == 0
        await wallet_settles(stack, event, leaver)  # an even split moves no money
    finally:
        await stop_service(stack.game.running)


async def test_unreachable_briefly_then_back_is_analysed(
    postgres_server: Any,
    kafka_broker: Any,
    geo_service: RunningService,
    wallet: RunningService,
) -> None:
    port = free_port()
    stack = await game_stack(
        postgres_server, kafka_broker, geo_service, wallet, f"127.0.0.1:{port}"
    )
    late: RunningAnalysis | None = None
    try:
        game = await new_game(stack)
        stayer = game.awaiting_account_id
        leaver = other(game, stayer)
        await goes_silent(stack, game, leaver)
        await window_passes(stack)
        assert await ended_count(stack, game.game_id) == 0
        late = await start_analysis(postgres_server, kafka_broker, port=port)
        stack.analysis = analysis_pb2_grpc.AnalysisServiceStub(late.running.channel)
        # The game retries every 10 s within the wait, as its timer does; its channel
        # reconnects within a second of the service's return (the attempt before may still
        # find it in its backoff and fail at once).
        for _ in range(4):  # 40 s of the 60 s wait at most
            stack.clock.advance(timedelta(seconds=10))
            await stack.game.service.fire_due_timers()
            if await ended_count(stack, game.game_id):
                break
            await asyncio.sleep(1.0)

        event = await ended(stack, game.game_id)
        assert event.analysed and event.settlement.method == "neural_net"
        expected = await analysed_share(stack, game.position_id, game.gnubg_match_id)
        assert share_of(event, stayer) == expected
    finally:
        await stop_service(stack.game.running)
        if late is not None:
            await late.stop()


async def waiting_settlements(stack: Stack) -> int:
    rows = await sql(
        stack.game_url, "SELECT count(*) AS n FROM timers WHERE kind LIKE 'reconnect%'"
    )
    return int(rows[0]["n"])


async def ended_count(stack: Stack, game_id: str) -> int:
    rows = await sql(
        stack.game_url,
        "SELECT count(*) AS n FROM outbox WHERE key = $1 AND ce_type = $2",
        game_id,
        GAME_ENDED,
    )
    return int(rows[0]["n"])
