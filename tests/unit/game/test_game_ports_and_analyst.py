"""The settlement analyst ports: the analysis service's shares, and the fallbacks."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import grpc
import pytest

from services.backgammon import bearoff, match_id, position_id
from services.backgammon.bearoff_eval import (
    CubeAccess,
    MoneyCube,
    cubeful_before_roll,
    probabilities,
)
from services.backgammon.board import BAR, Board
from services.backgammon.match_id import MatchIdState
from services.game.analyst import RulesLibraryAnalyst
from services.game.ports import EVEN_SPLIT, GrpcAnalyst, SettledPosition, Settlement
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tests.support.identity import minter
from tests.support.services import free_port

GAME = minter("game")

POSITION = SettledPosition("4HPwATDgc/ABMA", "cAkKAAAAAAAA", on_roll=1, match_length=0, race=False)


class Analysis(analysis_pb2_grpc.AnalysisServiceServicer):
    def __init__(self) -> None:
        self.shares = ("0.62", "0.38")

    async def SettlementShares(self, request: Any, context: Any) -> Any:
        return analysis_pb2.SettlementSharesResponse(
            cubeful_equity=0.24,
            on_roll_share=self.shares[0],
            opponent_share=self.shares[1],
            method=analysis_pb2.SHARE_METHOD_NEURAL_NET,
        )


@pytest.fixture
async def analysis() -> AsyncIterator[tuple[str, Analysis]]:
    server = grpc.aio.server()
    servicer = Analysis()
    analysis_pb2_grpc.add_AnalysisServiceServicer_to_server(servicer, server)
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    yield f"127.0.0.1:{port}", servicer
    await server.stop(0)


async def test_shares_follow_the_player_on_roll(analysis: tuple[str, Analysis]) -> None:
    address, _ = analysis
    settled = await GrpcAnalyst(address, GAME, fallback=RulesLibraryAnalyst()).settle(POSITION)
    assert settled.shares == (Decimal("0.38"), Decimal("0.62"))  # player 1 is on roll
    assert settled.analysed


async def test_invalid_shares_fall_back(analysis: tuple[str, Analysis]) -> None:
    address, servicer = analysis
    servicer.shares = ("0.7", "0.7")
    settled = await GrpcAnalyst(address, GAME, fallback=RulesLibraryAnalyst()).settle(POSITION)
    assert settled == EVEN_SPLIT


async def test_an_unreachable_analysis_service_falls_back_to_not_analysed() -> None:
    analyst = GrpcAnalyst(
        f"127.0.0.1:{free_port()}", GAME, RulesLibraryAnalyst(), timeout_seconds=0.5
    )
    settled = await analyst.settle(POSITION)
    assert settled.shares == (Decimal("0.5"), Decimal("0.5")) and not settled.analysed


def settled(
    mine: tuple[int, ...],
    theirs: tuple[int, ...],
    *,
    on_roll: int = 0,
    match_length: int = 0,
    **state: Any,
) -> SettledPosition:
    """A position for the analyst, ``mine`` being the side on roll (player ``on_roll``)."""
    pad = (0,) * (BAR + 1)
    board = Board(tuple(mine) + pad[len(mine) :], tuple(theirs) + pad[len(theirs) :])
    state.setdefault("turn", on_roll)
    ids = MatchIdState(on_roll=on_roll, match_length=match_length, **state)
    return SettledPosition(
        position_id.encode(board), match_id.encode(ids), on_roll, match_length, board.is_race()
    )


def bearoff_board(position: SettledPosition) -> Board:
    return position_id.decode(position.position_id)


async def test_a_money_bearoff_is_split_by_its_cubeful_equity() -> None:
    position = settled((0, 2, 1), (0, 0, 2, 1), on_roll=1)
    result = await RulesLibraryAnalyst(use_cache=False).settle(position)
    equity = cubeful_before_roll(
        probabilities(bearoff_board(position)), MoneyCube(CubeAccess.CENTRED)
    )
    assert result.analysed
    assert result.shares[1] == pytest.approx(Decimal((1 + equity / 3) / 2), abs=Decimal("1e-6"))
    assert sum(result.shares) == 1 and min(result.shares) >= 0


@pytest.fixture
def cached_analyst(request: pytest.FixtureRequest, tmp_path: Path) -> RulesLibraryAnalyst:
    """An analyst on the whole database, kept in pytest's cache between runs (built once)."""
    cache = request.config.cache
    return RulesLibraryAnalyst(cache.mkdir("tavla-bearoff") if cache else tmp_path)


async def test_cube_ownership_and_the_jacoby_rule_change_the_split(
    cached_analyst: RulesLibraryAnalyst,
) -> None:
    analyst = cached_analyst
    mine, theirs = (0, 0, 0, 0, 1), (0, 0, 0, 0, 0, 15)
    centred = await analyst.settle(settled(mine, theirs, jacoby=True))
    owned = await analyst.settle(settled(mine, theirs, cube_value=2, cube_owner=0))
    assert owned.shares[0] > centred.shares[0] > Decimal("0.5")


async def test_a_sure_win_after_the_roll_takes_its_points() -> None:
    position = settled((1,), (0, 0, 1), on_roll=1, dice=(2, 1))
    result = await RulesLibraryAnalyst(use_cache=False).settle(position)
    # one point of the three each player put in: 4/6 of the pot to player 1
    assert result == Settlement((Decimal("0.333333"), Decimal("0.666667")), analysed=True)


async def test_a_deciding_match_game_is_split_by_the_chance_to_win_it() -> None:
    position = settled((0, 0, 0, 0, 0, 1), (1,), match_length=5, score=(4, 4))
    result = await RulesLibraryAnalyst(use_cache=False).settle(position)
    assert result == Settlement((Decimal("0.75"), Decimal("0.25")), analysed=True)


@pytest.mark.parametrize(
    "position",
    [
        POSITION,  # contact
        settled((0, 0, 0, 0, 0, 0, 1), (1,)),  # a race, not yet a bear-off
        settled((0, 0, 0, 0, 0, 1), (1,), match_length=5, score=(2, 3)),  # needs a match table
        settled((0, 0, 0, 0, 0, 1), (1,), doubled=True, turn=1),  # the answer decides
        settled((0, 0, 0, 0, 0, 1), (1,), resignation=1),
    ],
)
async def test_positions_without_exact_figures_are_not_analysed(position: SettledPosition) -> None:
    assert await RulesLibraryAnalyst(use_cache=False).settle(position) == EVEN_SPLIT


async def test_the_analyst_reads_the_whole_database_from_its_cache(
    cached_analyst: RulesLibraryAnalyst,
) -> None:
    await cached_analyst.settle(settled((1,), (1,)))
    assert bearoff.default_database().complete


async def test_warm_up_puts_the_database_out_of_the_collectors_reach(
    cached_analyst: RulesLibraryAnalyst,
) -> None:
    """Every full collection would otherwise walk its ~100,000 objects (tens of ms, mid-call)."""
    try:
        await cached_analyst.warm_up()
        database = bearoff.default_database()
        assert gc.get_freeze_count() > 100_000
        assert not any(tracked is database for tracked in gc.get_objects())
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual
