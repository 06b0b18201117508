"""What the game service needs from other services: the wallet and a settlement analyst.

``WalletPort`` claims both seats' stake holds for a game before a real-money game is
created, checks that a player can cover a cube, and raises a stake hold before a
cube action is applied; ``GrpcWallet`` calls the wallet service's internal RPCs and
turns its refusals into kit errors the player can act on.
``SettlementAnalyst`` gives each side's share of the stake for a position left by
a disconnected player; ``GrpcAnalyst`` asks the analysis service's ``SettlementShares``
(every position kind), and says so with ``AnalysisUnavailable`` when it cannot; the
game service then retries and, past its wait, settles by ``not_analysed`` (even split).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

import grpc

from services.game.domain import Figures
from services.kit.client import service_channel
from services.kit.logging import get_logger
from services.kit.remote import refusal, unanswered
from services.kit.service_tokens import ServiceTokenMinter
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

log = get_logger(__name__)

NOT_ANALYSED = "not_analysed"


@dataclass(frozen=True)
class Cover:
    ok: bool
    reason: str = ""


class WalletPort(Protocol):
    async def close(self) -> None:
        """Let go of the connection (the service is stopping)."""
        ...

    async def can_cover(
        self, account_id: str, amount_minor: int, currency: str, hold_id: str
    ) -> Cover:
        """Whether ``account_id`` can have ``amount_minor`` held (its hold counting towards it)."""
        ...

    async def raise_hold(
        self, hold_id: str, amount_minor: int, currency: str, game_id: str, key: str
    ) -> None:
        """Grow the stake hold to ``amount_minor`` in total (idempotent on ``key``).

        Raises ``FailedPrecondition`` (with the wallet's reason) when it cannot be held.
        """
        ...

    async def claim_holds(
        self,
        table_id: str,
        game_id: str,
        seats: Sequence[tuple[str, str]],
        amount_minor: int,
        currency: str,
    ) -> None:
        """Bind each (account, hold id) seat's stake, held at ``table_id`` for at least
        ``amount_minor``, to ``game_id``; else ``FailedPrecondition`` (or
        ``InvalidArgument`` for a currency the wallet does not play in) saying why."""
        ...


class GrpcWallet:
    """The wallet service over gRPC (``TAVLA_WALLET_ADDRESS``), calling as this service."""

    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 2.0
    ) -> None:
        self._channel = service_channel(address, target="wallet", credentials=credentials)
        self._stub = wallet_pb2_grpc.WalletServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def close(self) -> None:
        await self._channel.close(None)

    async def can_cover(
        self, account_id: str, amount_minor: int, currency: str, hold_id: str
    ) -> Cover:
        request = wallet_pb2.CanCoverRequest(
            account_id=account_id,
            amount=money_pb2.Money(minor_units=amount_minor, currency=currency),
            hold_id=hold_id,
        )
        try:
            response = await self._stub.CanCover(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise unanswered(error, "wallet") from None
        return Cover(response.can_cover, response.reason)

    async def raise_hold(
        self, hold_id: str, amount_minor: int, currency: str, game_id: str, key: str
    ) -> None:
        request = wallet_pb2.RaiseHoldRequest(
            hold_id=hold_id,
            new_amount=money_pb2.Money(minor_units=amount_minor, currency=currency),
            game_id=game_id,
            idempotency_key=key,
        )
        try:
            await self._stub.RaiseHold(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None

    async def claim_holds(
        self,
        table_id: str,
        game_id: str,
        seats: Sequence[tuple[str, str]],
        amount_minor: int,
        currency: str,
    ) -> None:
        request = wallet_pb2.ClaimHoldsRequest(
            table_id=table_id,
            game_id=game_id,
            required=money_pb2.Money(minor_units=amount_minor, currency=currency),
            seats=[wallet_pb2.SeatHold(account_id=a, hold_id=h) for a, h in seats],
        )
        try:
            await self._stub.ClaimHolds(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None


@dataclass(frozen=True)
class SettledPosition:
    """A position to settle: GNU Backgammon ids from the side of the player on roll."""

    position_id: str
    gnubg_match_id: str
    on_roll: int
    match_length: int
    race: bool


@dataclass(frozen=True)
class Settlement:
    """Each player's share (player 0, player 1) of the stake at risk (they sum to 1), and
    the figures they came from."""

    shares: tuple[Decimal, Decimal]
    analysed: bool
    figures: Figures


class AnalysisUnavailable(Exception):
    """The analysis service gave no usable answer this time (the caller may try again)."""


class SettlementAnalyst(Protocol):
    async def settle(self, position: SettledPosition) -> Settlement:
        """The analysed shares, or ``AnalysisUnavailable``."""
        ...

    async def close(self) -> None:
        """Let go of the connection (the service is stopping)."""
        ...


def not_analysed(on_roll: int, why: str) -> Settlement:
    """The even split, marked "not analysed", saying why."""
    figures = Figures(NOT_ANALYSED, why, on_roll)
    return Settlement((Decimal("0.5"), Decimal("0.5")), analysed=False, figures=figures)


_METHODS = {
    analysis_pb2.SHARE_METHOD_NEURAL_NET: "neural_net",
    analysis_pb2.SHARE_METHOD_EXACT: "exact",
}


# Calls fail fast while the channel is down (no wait_for_ready: the timer loop must not
# stall on one settlement); gRPC's default reconnect backoff grows to 120 s, which could
# outlast the whole analysis wait after the service is back. Try again within a second.
_PROMPT_RECONNECT = (
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.min_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 1000),
)


class GrpcAnalyst:
    """The analysis service's ``SettlementShares`` (``TAVLA_ANALYSIS_ADDRESS``): the one
    source of every disconnection's shares, whatever the position.

    One call per :meth:`settle`; a failed call, or an answer that is not a valid split,
    raises :class:`AnalysisUnavailable`, and the game service decides when to try again
    and when it has waited long enough (``GameService``: the reconnect timer retries
    until ``TAVLA_GAME_ANALYSIS_WAIT_SECONDS`` have passed).
    """

    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 5.0
    ) -> None:
        self._channel = service_channel(
            address, target="analysis", credentials=credentials, options=_PROMPT_RECONNECT
        )
        self._stub = analysis_pb2_grpc.AnalysisServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def close(self) -> None:
        await self._channel.close(None)

    async def settle(self, position: SettledPosition) -> Settlement:
        request = analysis_pb2.SettlementSharesRequest(
            position_id=position.position_id, gnubg_match_id=position.gnubg_match_id
        )
        try:
            response = await self._stub.SettlementShares(request, timeout=self._timeout)
            on_roll, other = Decimal(response.on_roll_share), Decimal(response.opponent_share)
        except (grpc.aio.AioRpcError, ArithmeticError) as error:
            log.warning("settlement_analysis_unavailable", error=repr(error))
            raise AnalysisUnavailable(f"the analysis service did not answer: {error!r}") from None
        method = _METHODS.get(response.method)
        if method is None or on_roll < 0 or other < 0 or on_roll + other != 1:
            log.warning("settlement_analysis_invalid", on_roll=str(on_roll), other=str(other))
            raise AnalysisUnavailable(
                f"the analysis service's answer is not a split ({on_roll} + {other})"
            )
        shares = (on_roll, other) if position.on_roll == 0 else (other, on_roll)
        figures = Figures(
            method=method,
            basis=response.basis,
            on_roll=position.on_roll,
            plies=response.plies,
            cubeful_equity=response.cubeful_equity,
            match_winning_chance=(
                response.match_winning_chance if response.HasField("match_winning_chance") else None
            ),
        )
        return Settlement(shares, analysed=True, figures=figures)
