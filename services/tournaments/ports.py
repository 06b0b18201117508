"""What the tournaments service needs from elsewhere: the wallet and the game service.

``WalletPort`` places and releases the registration holds, adds the house's money to
a pool (a freeroll's, an added prize), and settles a pool of holds (the fees at the
start, the prizes at the final); ``GamePort`` creates a match's game.
The gRPC adapters call as this service (its service credential) and turn refusals
into kit errors the player can act on; an outage is ``Unavailable``. Every call
carries a key derived from the tournament, so a retry does nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

import grpc

from services.kit.client import service_channel
from services.kit.errors import FailedPrecondition
from services.kit.remote import refusal
from services.kit.service_tokens import ServiceTokenMinter
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc


class WalletPort(Protocol):
    async def place_hold(
        self, account_id: str, amount_minor: int, currency: str, table_id: str, key: str
    ) -> str:
        """The hold id (idempotent on ``key``)."""
        ...

    async def release_hold(self, hold_id: str, reason: str) -> None: ...

    async def add_to_pool(self, table_id: str, amount_minor: int, currency: str, key: str) -> str:
        """The house hold of an added prize at ``table_id`` (idempotent on ``key``: the
        same key answers the same hold, whatever became of it)."""
        ...

    async def settle_pool(
        self,
        table_id: str,
        hold_ids: Sequence[str],
        currency: str,
        house_revenue: int,
        payouts: Mapping[str, int],
        key: str,
    ) -> None: ...

    async def settle_tickets(
        self,
        table_id: str,
        hold_ids: Sequence[str],
        currency: str,
        winners: Sequence[str],
        target: TicketTarget,
        key: str,
        payouts: Mapping[str, int] = MappingProxyType({}),
    ) -> dict[str, tuple[str, str]]:
        """Pay a satellite's pool as tickets: each winner's ticket held at the target, and
        ``payouts`` in cash (the remainder). Each winner's (buy-in hold id, fee hold id or
        "")."""
        ...


@dataclass(frozen=True, slots=True)
class TicketTarget:
    tournament_id: str
    buy_in: int
    entry_fee: int


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


async def hold_added_prize(
    wallet: WalletPort, tournament_id: str, amount_minor: int, currency: str
) -> str:
    """The house hold of a tournament's added prize, keyed ``<id>:added-prize``: the first
    call places it, every later one (a retry, the start, the final, a cancellation)
    answers the same hold, so its id need not be stored."""
    return await wallet.add_to_pool(
        tournament_id, amount_minor, currency, f"{tournament_id}:added-prize"
    )


def _money(minor_units: int, currency: str) -> money_pb2.Money:
    return money_pb2.Money(minor_units=minor_units, currency=currency)


# A pool is settled in one wallet transaction over every entrant's hold (1,024 for the
# largest field): seconds on a busy machine, and a call cut off at its deadline is rolled
# back, so the driver's retries would never get through.
SETTLE_TIMEOUT_SECONDS = 60.0


class GrpcWallet:
    """The wallet service over gRPC (``TAVLA_WALLET_ADDRESS``), calling as tournaments."""

    def __init__(
        self, address: str, credentials: ServiceTokenMinter, timeout_seconds: float = 5.0
    ) -> None:
        self._channel = service_channel(address, target="wallet", credentials=credentials)
        self._stub = wallet_pb2_grpc.WalletServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def place_hold(
        self, account_id: str, amount_minor: int, currency: str, table_id: str, key: str
    ) -> str:
        request = wallet_pb2.PlaceHoldRequest(
            account_id=account_id,
            amount=_money(amount_minor, currency),
            table_id=table_id,
            idempotency_key=key,
        )
        try:
            hold = await self._stub.PlaceHold(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None
        if hold.status != wallet_pb2.HOLD_STATUS_OPEN:
            raise FailedPrecondition(f"hold {hold.hold_id} for key {key!r} is no longer open")
        return str(hold.hold_id)

    async def release_hold(self, hold_id: str, reason: str) -> None:
        request = wallet_pb2.ReleaseHoldRequest(
            hold_id=hold_id, reason=reason, idempotency_key=f"release:{hold_id}"
        )
        try:
            await self._stub.ReleaseHold(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None

    async def add_to_pool(self, table_id: str, amount_minor: int, currency: str, key: str) -> str:
        request = wallet_pb2.AddToPoolRequest(
            table_id=table_id, amount=_money(amount_minor, currency), idempotency_key=key
        )
        try:
            hold = await self._stub.AddToPool(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None
        return str(hold.hold_id)

    async def settle_pool(
        self,
        table_id: str,
        hold_ids: Sequence[str],
        currency: str,
        house_revenue: int,
        payouts: Mapping[str, int],
        key: str,
    ) -> None:
        request = wallet_pb2.SettlePoolRequest(
            table_id=table_id,
            hold_ids=list(hold_ids),
            house_revenue=_money(house_revenue, currency),
            payouts=[
                wallet_pb2.PoolPayout(account_id=account, amount=_money(amount, currency))
                for account, amount in sorted(payouts.items())
            ],
            idempotency_key=key,
        )
        try:
            await self._stub.SettlePool(request, timeout=SETTLE_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None

    async def settle_tickets(
        self,
        table_id: str,
        hold_ids: Sequence[str],
        currency: str,
        winners: Sequence[str],
        target: TicketTarget,
        key: str,
        payouts: Mapping[str, int] = MappingProxyType({}),
    ) -> dict[str, tuple[str, str]]:
        request = wallet_pb2.SettlePoolRequest(
            table_id=table_id,
            hold_ids=list(hold_ids),
            house_revenue=_money(0, currency),
            payouts=[
                wallet_pb2.PoolPayout(account_id=account, amount=_money(amount, currency))
                for account, amount in sorted(payouts.items())
            ],
            tickets=[
                wallet_pb2.PoolTicket(
                    account_id=winner,
                    table_id=target.tournament_id,
                    buy_in=_money(target.buy_in, currency),
                    entry_fee=_money(target.entry_fee, currency),
                )
                for winner in winners
            ],
            idempotency_key=key,
        )
        try:
            response = await self._stub.SettlePool(request, timeout=SETTLE_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise refusal(error, "wallet") from None
        held: dict[str, list[str]] = {}
        for hold in response.ticket_holds:  # each ticket's buy-in hold, then its fee hold
            held.setdefault(hold.account_id, []).append(str(hold.hold_id))
        if sorted(held) != sorted(winners):
            raise FailedPrecondition(f"the wallet held tickets for {sorted(held)}, not {winners}")
        return {winner: (ids[0], ids[1] if len(ids) > 1 else "") for winner, ids in held.items()}

    async def close(self) -> None:
        await self._channel.close(None)
