"""The settlement analyst port: the analysis service's shares and figures, and
``AnalysisUnavailable`` (never a made-up split) when it gives no usable answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import grpc
import pytest

from services.game.domain import Figures
from services.game.ports import (
    AnalysisUnavailable,
    GrpcAnalyst,
    SettledPosition,
    not_analysed,
)
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tests.support.identity import minter
from tests.support.services import free_port

GAME = minter("game")

POSITION = SettledPosition("4HPwATDgc/ABMA", "cAkKAAAAAAAA", on_roll=1, match_length=0, race=False)


class Analysis(analysis_pb2_grpc.AnalysisServiceServicer):
    def __init__(self) -> None:
        self.shares = ("0.62", "0.38")
        self.method = analysis_pb2.SHARE_METHOD_NEURAL_NET

    async def SettlementShares(self, request: Any, context: Any) -> Any:
        return analysis_pb2.SettlementSharesResponse(
            cubeful_equity=0.72,
            on_roll_share=self.shares[0],
            opponent_share=self.shares[1],
            method=self.method,
            plies=2,
            basis="cubeful equity before the roll",
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


async def test_shares_follow_the_player_on_roll_with_the_figures(
    analysis: tuple[str, Analysis],
) -> None:
    address, _ = analysis
    settled = await GrpcAnalyst(address, GAME).settle(POSITION)
    assert settled.shares == (Decimal("0.38"), Decimal("0.62"))  # player 1 is on roll
    assert settled.analysed
    assert settled.figures == Figures(
        "neural_net", "cubeful equity before the roll", 1, 2, pytest.approx(0.72), None
    )


@pytest.mark.parametrize(
    ("shares", "method"),
    [
        (("0.7", "0.7"), analysis_pb2.SHARE_METHOD_NEURAL_NET),  # not a split
        (("0.5", "0.5"), analysis_pb2.SHARE_METHOD_UNSPECIFIED),  # no figures behind it
        (("x", "0.5"), analysis_pb2.SHARE_METHOD_EXACT),  # not a number
    ],
)
async def test_an_unusable_answer_is_unavailable_not_a_split(
    analysis: tuple[str, Analysis], shares: tuple[str, str], method: int
) -> None:
    address, servicer = analysis
    servicer.shares, servicer.method = shares, method  # type: ignore[assignment]
    with pytest.raises(AnalysisUnavailable):
        await GrpcAnalyst(address, GAME).settle(POSITION)


async def test_an_unreachable_analysis_service_is_unavailable() -> None:
    analyst = GrpcAnalyst(f"127.0.0.1:{free_port()}", GAME, timeout_seconds=0.5)
    with pytest.raises(AnalysisUnavailable, match="did not answer"):
        await analyst.settle(POSITION)


def test_not_analysed_is_the_even_split_saying_why() -> None:
    settled = not_analysed(1, "analysis unreachable")
    assert settled.shares == (Decimal("0.5"), Decimal("0.5")) and not settled.analysed
    assert settled.figures == Figures("not_analysed", "analysis unreachable", 1)
