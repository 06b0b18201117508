"""The WalletService gRPC servicer: protobuf <-> domain, and wallet errors -> gRPC status.

Public calls act on the signed-in player whose access token the kit verified
(``acting_account``); internal calls (holds, cover checks, freezes) come only
from the services their contract names, and name the account in the request.
Each ``WalletError`` becomes the kit error whose status a client can act on,
keeping the domain's message, which says what to do. Deposits, withdrawals and
the play-money top-up pass the player's declared residence (from the access
token) and the client's address (from the gateway) to the use case, which asks
the geo service before anything else.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any, Concatenate, ParamSpec, TypeVar

import grpc

from services.kit.auth import acting_account, acting_residence
from services.kit.client_signals import client_signals
from services.kit.clock import protobuf_timestamp
from services.kit.errors import (
    AlreadyExists,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from services.wallet.domain.commission import CommissionQuote
from services.wallet.domain.errors import WalletError
from services.wallet.domain.holds import HoldStatus
from services.wallet.domain.limits import LimitPeriod
from services.wallet.domain.money import Money
from services.wallet.domain.payments import PaymentStatus
from services.wallet.domain.terms import WinType
from services.wallet.holds import HoldRefused, HoldRequest
from services.wallet.limits import LimitView
from services.wallet.messages import money_message, period_message
from services.wallet.payments import PaymentView
from services.wallet.pools import TicketOrder
from services.wallet.service import WalletService
from services.wallet.store.holds import StoredHold
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc

Context = grpc.aio.ServicerContext[Any, Any]

_ERRORS: dict[str, type[DomainError]] = {
    "INVALID_AMOUNT": InvalidArgument,
    "UNKNOWN_CURRENCY": InvalidArgument,
    "CURRENCY_MISMATCH": InvalidArgument,
    "INVALID_TRANSFER": InvalidArgument,
    "INVALID_SETTLEMENT": InvalidArgument,
    "INVALID_QUOTE_INPUT": InvalidArgument,
    "IDEMPOTENCY_CONFLICT": AlreadyExists,
    "UNKNOWN_ACCOUNT": NotFound,
    "UNKNOWN_PAYMENT": NotFound,
    "PLAY_MONEY_TOP_UP_TOO_SOON": ResourceExhausted,
    # The rest are refusals of a well-formed request: the account's state must change first.
    "INSUFFICIENT_FUNDS": FailedPrecondition,
    "LIMIT_EXCEEDED": FailedPrecondition,
    "SELF_EXCLUDED": FailedPrecondition,
    "ACCOUNT_FROZEN": FailedPrecondition,
    "ACCOUNT_NOT_VERIFIED": FailedPrecondition,
    "INVALID_HOLD_STATE": FailedPrecondition,
    "INVALID_PAYMENT_TRANSITION": FailedPrecondition,
    "UNKNOWN_SCHEDULE": FailedPrecondition,
    "STAKE_NOT_HELD": FailedPrecondition,
}


def as_kit_error(error: WalletError) -> DomainError:
    return _ERRORS.get(error.reason, FailedPrecondition)(str(error))


P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


def translated(
    method: Callable[Concatenate[S, P], Awaitable[R]],
) -> Callable[Concatenate[S, P], Awaitable[R]]:
    async def call(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await method(self, *args, **kwargs)
        except WalletError as error:
            raise as_kit_error(error) from None

    return call


def money_from(message: money_pb2.Money, field: str, present: bool = True) -> Money:
    if not present:
        raise InvalidArgument(f"{field} is required: minor_units and currency, e.g. 1050 USD")
    if not message.currency:
        raise InvalidArgument(f"{field}.currency is required, e.g. USD or PLAY")
    return Money(int(message.minor_units), message.currency.upper())


_HOLD_STATUS = {
    HoldStatus.OPEN: wallet_pb2.HOLD_STATUS_OPEN,
    HoldStatus.POSTED: wallet_pb2.HOLD_STATUS_POSTED,
    HoldStatus.VOIDED: wallet_pb2.HOLD_STATUS_RELEASED,
}
_PAYMENT_STATUS = {
    PaymentStatus.REQUESTED: wallet_pb2.PAYMENT_STATUS_PENDING,
    PaymentStatus.CONFIRMED: wallet_pb2.PAYMENT_STATUS_COMPLETED,
    PaymentStatus.FAILED: wallet_pb2.PAYMENT_STATUS_FAILED,
}
_PERIODS = {
    wallet_pb2.LIMIT_PERIOD_DAY: LimitPeriod.DAY,
    wallet_pb2.LIMIT_PERIOD_WEEK: LimitPeriod.WEEK,
    wallet_pb2.LIMIT_PERIOD_MONTH: LimitPeriod.MONTH,
}
_WIN_TYPES = {
    game_pb2.RESULT_TYPE_UNSPECIFIED: WinType.SINGLE,
    game_pb2.RESULT_TYPE_SINGLE: WinType.SINGLE,
    game_pb2.RESULT_TYPE_GAMMON: WinType.GAMMON,
    game_pb2.RESULT_TYPE_BACKGAMMON: WinType.BACKGAMMON,
}


def hold_message(stored: StoredHold) -> wallet_pb2.Hold:
    hold = stored.hold
    return wallet_pb2.Hold(
        hold_id=hold.id,
        account_id=hold.player_id,
        amount=money_message(hold.amount),
        table_id=hold.table_id,
        game_id=hold.game_id or "",
        status=_HOLD_STATUS[hold.status],
        created_at=protobuf_timestamp(stored.created_at),
    )


def payment_message(view: PaymentView) -> wallet_pb2.PaymentOperation:
    payment = view.payment
    return wallet_pb2.PaymentOperation(
        operation_id=payment.id,
        amount=money_message(payment.amount),
        status=_PAYMENT_STATUS[payment.status],
        failure_reason=payment.failure_reason or "",
        redirect_url=view.redirect_url,
        created_at=protobuf_timestamp(view.created_at),
    )


def quote_message(quote: CommissionQuote) -> wallet_pb2.CommissionQuote:
    return wallet_pb2.CommissionQuote(
        rate=format(quote.rate.normalize(), "f"),
        commission_per_player=money_message(quote.per_player),
        commission_total=money_message(quote.total),
        winner_credit=money_message(quote.winner_credit),
        loser_debit=money_message(quote.loser_debit),
        schedule_version=quote.schedule_version,
    )


def limit_message(view: LimitView) -> wallet_pb2.DepositLimit:
    message = wallet_pb2.DepositLimit(period=period_message(view.period))
    if view.current is not None:
        message.current.CopyFrom(money_message(view.current))
    if view.pending is not None:
        message.pending.CopyFrom(money_message(view.pending))
    if view.pending_effective_at is not None:
        message.pending_effective_at.CopyFrom(protobuf_timestamp(view.pending_effective_at))
    message.used.CopyFrom(money_message(view.used))
    return message


def _rating(value: float, field: str) -> Decimal:
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"{field} must be a non-negative rating such as 1500")
    return Decimal(str(value))  # the double's shortest repr is the decimal the caller meant


class WalletApi(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(self, service: WalletService) -> None:
        self._service = service

    # ---------------------------------------------------------------- public

    @translated
    async def GetBalances(
        self, request: wallet_pb2.GetBalancesRequest, context: Context
    ) -> wallet_pb2.GetBalancesResponse:
        balances = await self._service.balances(acting_account(context))
        return wallet_pb2.GetBalancesResponse(
            balances=[
                wallet_pb2.Balance(
                    currency=b.currency,
                    available=money_message(b.available),
                    held=money_message(b.held),
                )
                for b in balances.balances
            ],
            frozen=balances.frozen,
        )

    @translated
    async def Deposit(
        self, request: wallet_pb2.DepositRequest, context: Context
    ) -> wallet_pb2.PaymentOperation:
        player = acting_account(context)
        view = await self._service.deposit(
            player_id=player,
            amount=money_from(request.amount, "amount", request.HasField("amount")),
            idempotency_key=request.idempotency_key,
            method=request.payment_method,
            residence=acting_residence(context),
            signals=client_signals(context),
        )
        return payment_message(view)

    @translated
    async def Withdraw(
        self, request: wallet_pb2.WithdrawRequest, context: Context
    ) -> wallet_pb2.PaymentOperation:
        player = acting_account(context)
        view = await self._service.withdraw(
            player_id=player,
            amount=money_from(request.amount, "amount", request.HasField("amount")),
            idempotency_key=request.idempotency_key,
            payout_method=request.payout_method,
            residence=acting_residence(context),
            signals=client_signals(context),
        )
        return payment_message(view)

    @translated
    async def TopUpPlayMoney(
        self, request: wallet_pb2.TopUpPlayMoneyRequest, context: Context
    ) -> wallet_pb2.TopUpPlayMoneyResponse:
        view = await self._service.top_up_play_money(
            player_id=acting_account(context),
            idempotency_key=request.idempotency_key,
            residence=acting_residence(context),
            signals=client_signals(context),
        )
        return wallet_pb2.TopUpPlayMoneyResponse(
            credited=money_message(view.credited),
            balance=money_message(view.balance),
            next_top_up_at=protobuf_timestamp(view.next_top_up_at),
        )

    @translated
    async def QuoteCommission(
        self, request: wallet_pb2.QuoteCommissionRequest, context: Context
    ) -> wallet_pb2.CommissionQuote:
        stake = money_from(request.stake, "stake", request.HasField("stake"))
        ratings = (_rating(request.rating_a, "rating_a"), _rating(request.rating_b, "rating_b"))
        if request.kind == wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME:
            win_type = _WIN_TYPES.get(request.result)
            if win_type is None:
                raise InvalidArgument(
                    f"result {request.result} is not single, gammon or backgammon"
                )
            quote = self._service.quote_single_game(
                stake, request.cube_value or 1, win_type, ratings
            )
        elif request.kind == wallet_pb2.SETTLEMENT_KIND_SERIES:
            if request.match_length < 1:
                raise InvalidArgument("a series quote needs match_length, the points played to")
            quote = self._service.quote_match(stake, request.match_length, ratings)
        else:
            raise InvalidArgument("kind is required: SETTLEMENT_KIND_SINGLE_GAME or _SERIES")
        return quote_message(quote)

    @translated
    async def SetDepositLimit(
        self, request: wallet_pb2.SetDepositLimitRequest, context: Context
    ) -> wallet_pb2.DepositLimit:
        player = acting_account(context)
        period = _PERIODS.get(request.period)
        if period is None:
            raise InvalidArgument("period is required: LIMIT_PERIOD_DAY, _WEEK or _MONTH")
        limit = money_from(request.limit, "limit") if request.HasField("limit") else None
        view = await self._service.set_deposit_limit(
            player_id=player,
            period=period,
            limit=limit,
            currency=(request.currency or "USD").upper(),
        )
        return limit_message(view)

    @translated
    async def ListDepositLimits(
        self, request: wallet_pb2.ListDepositLimitsRequest, context: Context
    ) -> wallet_pb2.ListDepositLimitsResponse:
        views = await self._service.deposit_limits(acting_account(context))
        return wallet_pb2.ListDepositLimitsResponse(limits=[limit_message(v) for v in views])

    # ---------------------------------------------------------------- internal

    @translated
    async def PlaceHold(
        self, request: wallet_pb2.PlaceHoldRequest, context: Context
    ) -> wallet_pb2.Hold:
        stored = await self._service.place_hold(
            player_id=request.account_id,
            amount=money_from(request.amount, "amount", request.HasField("amount")),
            table_id=request.table_id,
            game_id=request.game_id,
            idempotency_key=request.idempotency_key,
        )
        return hold_message(stored)

    @translated
    async def PlaceHolds(
        self, request: wallet_pb2.PlaceHoldsRequest, context: Context
    ) -> wallet_pb2.PlaceHoldsResponse:
        placed = await self._service.place_holds(
            [
                HoldRequest(
                    player_id=hold.account_id,
                    amount=money_from(hold.amount, f"holds[{i}].amount", hold.HasField("amount")),
                    table_id=hold.table_id,
                    game_id=hold.game_id,
                    idempotency_key=hold.idempotency_key,
                )
                for i, hold in enumerate(request.holds)
            ]
        )
        if isinstance(placed, HoldRefused):
            return wallet_pb2.PlaceHoldsResponse(
                holds=[hold_message(s) for s in placed.placed_before],
                refused=wallet_pb2.HoldRefusal(
                    index=placed.index, account_id=placed.player_id, reason=placed.reason
                ),
            )
        return wallet_pb2.PlaceHoldsResponse(holds=[hold_message(s) for s in placed])

    @translated
    async def RaiseHold(
        self, request: wallet_pb2.RaiseHoldRequest, context: Context
    ) -> wallet_pb2.Hold:
        stored = await self._service.raise_hold(
            hold_id=request.hold_id,
            new_amount=money_from(request.new_amount, "new_amount", request.HasField("new_amount")),
            game_id=request.game_id,
        )
        return hold_message(stored)

    @translated
    async def ReleaseHold(
        self, request: wallet_pb2.ReleaseHoldRequest, context: Context
    ) -> wallet_pb2.Hold:
        stored = await self._service.release_hold(hold_id=request.hold_id, reason=request.reason)
        return hold_message(stored)

    @translated
    async def ClaimHolds(
        self, request: wallet_pb2.ClaimHoldsRequest, context: Context
    ) -> wallet_pb2.ClaimHoldsResponse:
        if len(request.seats) != 2:
            raise InvalidArgument("seats: a game has exactly two seats, each with its hold_id")
        claimed = await self._service.claim_holds(
            table_id=request.table_id,
            game_id=request.game_id,
            seats=[(seat.account_id, seat.hold_id) for seat in request.seats],
            required=money_from(request.required, "required", request.HasField("required")),
        )
        return wallet_pb2.ClaimHoldsResponse(holds=[hold_message(s) for s in claimed])

    @translated
    async def SettlePool(
        self, request: wallet_pb2.SettlePoolRequest, context: Context
    ) -> wallet_pb2.SettlePoolResponse:
        house = money_from(
            request.house_revenue, "house_revenue", request.HasField("house_revenue")
        )
        payouts: dict[str, Money] = {}
        for payout in request.payouts:
            if payout.account_id in payouts:
                raise InvalidArgument(f"payouts: {payout.account_id} is listed twice")
            payouts[payout.account_id] = money_from(
                payout.amount, "payouts.amount", payout.HasField("amount")
            )
        tickets = [
            TicketOrder(
                ticket.account_id,
                ticket.table_id,
                money_from(ticket.buy_in, "tickets.buy_in", ticket.HasField("buy_in")),
                money_from(ticket.entry_fee, "tickets.entry_fee", ticket.HasField("entry_fee")),
            )
            for ticket in request.tickets
        ]
        settled = await self._service.settle_pool(
            table_id=request.table_id,
            hold_ids=list(request.hold_ids),
            house_revenue=house,
            payouts=payouts,
            idempotency_key=request.idempotency_key,
            tickets=tickets,
        )
        return wallet_pb2.SettlePoolResponse(
            holds=[hold_message(s) for s in settled.posted],
            ticket_holds=[hold_message(s) for s in settled.ticket_holds],
        )

    @translated
    async def AddToPool(
        self, request: wallet_pb2.AddToPoolRequest, context: Context
    ) -> wallet_pb2.Hold:
        stored = await self._service.add_to_pool(
            table_id=request.table_id,
            amount=money_from(request.amount, "amount", request.HasField("amount")),
            idempotency_key=request.idempotency_key,
        )
        return hold_message(stored)

    @translated
    async def CanCover(
        self, request: wallet_pb2.CanCoverRequest, context: Context
    ) -> wallet_pb2.CanCoverResponse:
        if not request.account_id:
            raise InvalidArgument("account_id is required")
        check = await self._service.can_cover(
            player_id=request.account_id,
            amount=money_from(request.amount, "amount", request.HasField("amount")),
            hold_id=request.hold_id,
        )
        return wallet_pb2.CanCoverResponse(
            can_cover=check.can_cover,
            reason="" if check.can_cover else check.reason,
            available=money_message(check.available),
            shortfall=money_message(check.shortfall),
        )

    @translated
    async def FreezeAccount(
        self, request: wallet_pb2.FreezeAccountRequest, context: Context
    ) -> wallet_pb2.FreezeAccountResponse:
        view = await self._service.freeze(
            player_id=request.account_id, reason=request.reason, alert_id=request.alert_id
        )
        return wallet_pb2.FreezeAccountResponse(
            account_id=view.player_id,
            frozen=view.frozen,
            changed_at=protobuf_timestamp(view.changed_at),
        )

    @translated
    async def UnfreezeAccount(
        self, request: wallet_pb2.UnfreezeAccountRequest, context: Context
    ) -> wallet_pb2.FreezeAccountResponse:
        view = await self._service.unfreeze(player_id=request.account_id, reason=request.reason)
        return wallet_pb2.FreezeAccountResponse(
            account_id=view.player_id,
            frozen=view.frozen,
            changed_at=protobuf_timestamp(view.changed_at),
        )
