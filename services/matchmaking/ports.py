"""What matchmaking needs from elsewhere: ratings, the wallet and the game service.

``RatingSource`` gives each player's current rating and experience (the
``ratings`` table, :class:`services.matchmaking.store.StoredRatings`; a player
without a row has 1500 and 0). ``WalletPort`` checks cover, places and releases
stake holds and quotes commissions; ``GamePort`` creates the game. The gRPC
adapters (the wallet's here, the game's the kit's :class:`services.kit.remote.GrpcGames`)
call as this service and turn refusals into kit errors the player can act on
(:func:`services.kit.remote.refusal`); an outage is ``Unavailable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import grpc

from services.kit.client import service_channel
from services.kit.errors import FailedPrecondition, Unavailable
from services.kit.logging import get_logger
from services.kit.remote import refusal
from services.kit.service_tokens import ServiceTokenMinter
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

log = get_logger(__name__)


@dataclass(frozen=True)
class PlayerRating:
    account_id: str
    rating: float
    experience: int


class RatingSource(Protocol):
    async def ratings(self, account_ids: Sequence[str]) -> Mapping[str, PlayerRating]:
        """Every named player's rating (1500/0 for one who has none yet)."""
        ...


@dataclass(frozen=True)
class Quote:
    """What a listed table would cost this player: the wallet's quote at cube 1."""

    kind: int  # wallet_pb2.SettlementKind
    stake_minor: int
    currency: str
    match_length: int
    ratings: tuple[float, float]


@dataclass(frozen=True)
class HoldOrder:
    """One hold of a seating: ``amount_minor`` of ``currency`` for ``account_id``, placed
    once on ``key``."""

    account_id: str
    amount_minor: int
    currency: str
    key: str


class HoldRefused(FailedPrecondition):
    """No hold of the call was placed: the one at ``index`` cannot be (the wallet's reason).
    ``placed_before`` (order index -> hold id): those an earlier call had placed, to release."""

    def __init__(self, message: str, index: int, placed_before: Mapping[int, str]) -> None:
        super().__init__(message)
        self.index = index
        self.placed_before = placed_before


class WalletPort(Protocol):
    async def can_cover(self, account_id: str, amount_minor: int, currency: str) -> str | None:
        """None when ``account_id`` can have ``amount_minor`` held; else the reason."""
        ...

    async def place_holds(self, table_id: str, orders: Sequence[HoldOrder]) -> list[str]:
        """The hold ids, in the order of ``orders``, placed together in one call or none
        (each idempotent on its key); ``HoldRefused`` when one player cannot have theirs."""
        ...

    async def release_hold(self, hold_id: str, reason: str) -> None: ...

    async def quote(
        self, quote: Quote, authorization: str
    ) -> wallet_pb2.CommissionQuote | None:
        """The wallet's quote, asked with the listing player's own access token; None
        when the wallet cannot be asked (the listing goes on without it)."""
        ...


class GamePort(Protocol):
    async def create_game(
        self,
        table_id: str,
        players: Sequence[game_pb2.Player],
        rules: game_pb2.TableRules,
        key: str,
    ) -> str:
        """The new game's id (idempotent on ``key``)."""
        ...


class GrpcWallet:
    """The wallet service over gRPC (``TAVLA_WALLET_ADDRESS``), calling as matchmaking."""

    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 3.0
    ) -> None:
        self._channel = service_channel(address, target="wallet", credentials=credentials)
        self._stub = wallet_pb2_grpc.WalletServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def can_cover(self, account_id: str, amount_minor: int, currency: str) -> str | None:
        request = wallet_pb2.CanCoverRequest(
            account_id=account_id,
            amount=money_pb2.Money(minor_units=amount_minor, currency=currency),
        )
        try:
            response = await self._stub.CanCover(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None
        return None if response.can_cover else response.reason or "the stake cannot be covered"

    async def place_holds(self, table_id: str, orders: Sequence[HoldOrder]) -> list[str]:
        request = wallet_pb2.PlaceHoldsRequest(
            holds=[
                wallet_pb2.PlaceHoldRequest(
                    account_id=order.account_id,
                    amount=money_pb2.Money(minor_units=order.amount_minor, currency=order.currency),
                    table_id=table_id,
                    idempotency_key=order.key,
                )
                for order in orders
            ]
        )
        try:
            placed = await self._stub.PlaceHolds(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None
        if placed.HasField("refused"):
            earlier = {hold.account_id: str(hold.hold_id) for hold in placed.holds}
            raise HoldRefused(
                placed.refused.reason,
                placed.refused.index,
                {i: earlier[o.account_id] for i, o in enumerate(orders) if o.account_id in earlier},
            )
        if len(placed.holds) != len(orders):
            raise Unavailable(f"the wallet placed {len(placed.holds)} of {len(orders)} holds")
        return [str(hold.hold_id) for hold in placed.holds]

    async def release_hold(self, hold_id: str, reason: str) -> None:
        request = wallet_pb2.ReleaseHoldRequest(
            hold_id=hold_id, reason=reason, idempotency_key=f"release:{hold_id}"
        )
        try:
            await self._stub.ReleaseHold(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None

    async def quote(self, quote: Quote, authorization: str) -> wallet_pb2.CommissionQuote | None:
        request = wallet_pb2.QuoteCommissionRequest(
            kind=quote.kind,  # type: ignore[arg-type]
            stake=money_pb2.Money(minor_units=quote.stake_minor, currency=quote.currency),
            cube_value=1,
            result=game_pb2.RESULT_TYPE_SINGLE,
            match_length=quote.match_length,
            rating_a=quote.ratings[0],
            rating_b=quote.ratings[1],
        )
        try:
            answer: wallet_pb2.CommissionQuote = await self._stub.QuoteCommission(
                request, timeout=self._timeout, metadata=[("authorization", authorization)]
            )
        except grpc.aio.AioRpcError as error:
            log.warning("quote_unavailable", code=error.code().name, details=error.details())
            return None
        return answer

    async def close(self) -> None:
        await self._channel.close(None)
