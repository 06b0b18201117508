"""The settlement analyst ports: the analysis service's shares, and the fallbacks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

import grpc
import pytest

from services.game.ports import (
    EVEN_SPLIT,
    GrpcAnalyst,
    RulesLibraryAnalyst,
    SettledPosition,
)
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tests.support.services import free_port

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
    settled = await GrpcAnalyst(address, fallback=RulesLibraryAnalyst()).settle(POSITION)
    assert settled.shares == (Decimal("0.38"), Decimal("0.62"))  # player 1 is on roll
    assert settled.analysed


async def test_invalid_shares_fall_back(analysis: tuple[str, Analysis]) -> None:
    address, servicer = analysis
    servicer.shares = ("0.7", "0.7")
    settled = await GrpcAnalyst(address, fallback=RulesLibraryAnalyst()).settle(POSITION)
    assert settled == EVEN_SPLIT


async def test_an_unreachable_analysis_service_falls_back_to_not_analysed() -> None:
    analyst = GrpcAnalyst(f"127.0.0.1:{free_port()}", RulesLibraryAnalyst(), timeout_seconds=0.5)
    settled = await analyst.settle(POSITION)
    assert settled.shares == (Decimal("0.5"), Decimal("0.5")) and not settled.analysed
