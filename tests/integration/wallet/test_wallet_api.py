"""The wallet's gRPC API on real PostgreSQL: payments, limits, holds, freezes, quotes, errors."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta

import grpc
import pytest

from services.wallet.audit_cli import audit_database
from tavla.accounts.v1 import events_pb2 as account_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2
from tests.support.wallet import (
    Wallet,
    as_player,
    balance,
    direct_accounts_consumer,
    fund,
    money,
    new_id,
    outbox_events,
    place_hold,
    received,
    wait_for_balance,
)

DAY = wallet_pb2.LIMIT_PERIOD_DAY


async def rpc_error(call: Awaitable[object]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def test_a_deposit_is_confirmed_by_the_provider_and_credited(wallet: Wallet) -> None:
    player = new_id()
    operation = await wallet.stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(2500), idempotency_key="k1", payment_method="sandbox"
        ),
        metadata=as_player(player),
    )
    assert operation.status == wallet_pb2.PAYMENT_STATUS_PENDING
    await wait_for_balance(wallet.stub, player, 2500)
    again = await wallet.stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(2500), idempotency_key="k1", payment_method="sandbox"
        ),
        metadata=as_player(player),
    )
    assert again.operation_id == operation.operation_id
    await asyncio.sleep(0.3)  # give the provider loop time to (wrongly) credit twice
    assert await balance(wallet.stub, player) == (2500, 0)


async def test_reusing_a_key_for_another_amount_is_refused(wallet: Wallet) -> None:
    player = new_id()
    request = wallet_pb2.DepositRequest(amount=money(100), idempotency_key="same")
    await wallet.stub.Deposit(request, metadata=as_player(player))
    other = wallet_pb2.DepositRequest(amount=money(200), idempotency_key="same")
    error = await rpc_error(wallet.stub.Deposit(other, metadata=as_player(player)))
    assert error.code() == grpc.StatusCode.ALREADY_EXISTS
    assert "new key" in (error.details() or "")


@pytest.mark.parametrize(
    ("amount", "key", "code", "words"),
    [
        (money(0), "k", grpc.StatusCode.INVALID_ARGUMENT, "more than zero"),
        (money(-500), "k", grpc.StatusCode.INVALID_ARGUMENT, "more than zero"),
        (money(100, "XYZ"), "k", grpc.StatusCode.INVALID_ARGUMENT, "not held by the wallet"),
        (money(100, ""), "k", grpc.StatusCode.INVALID_ARGUMENT, "currency is required"),
        (money(100), "", grpc.StatusCode.INVALID_ARGUMENT, "idempotency_key is required"),
        (None, "k", grpc.StatusCode.INVALID_ARGUMENT, "amount is required"),
    ],
)
async def test_bad_deposits_get_clear_errors(
    wallet: Wallet,
    amount: money_pb2.Money | None,
    key: str,
    code: grpc.StatusCode,
    words: str,
) -> None:
    request = wallet_pb2.DepositRequest(idempotency_key=key)
    if amount is not None:
        request.amount.CopyFrom(amount)
    error = await rpc_error(wallet.stub.Deposit(request, metadata=as_player(new_id())))
    assert error.code() == code
    assert words in (error.details() or "")


async def test_public_calls_need_a_signed_in_player(wallet: Wallet) -> None:
    error = await rpc_error(wallet.stub.GetBalances(wallet_pb2.GetBalancesRequest()))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_a_declined_deposit_credits_nothing(wallet: Wallet) -> None:
    player = new_id()
    await wallet.stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(900), idempotency_key="d", payment_method="sandbox-decline"
        ),
        metadata=as_player(player),
    )
    await asyncio.sleep(0.4)
    assert await balance(wallet.stub, player) == (0, 0)


async def test_withdrawals_need_funds_a_verified_destination_and_no_freeze(wallet: Wallet) -> None:
    player = new_id()
    await fund(wallet.stub, player, 5000)

    def withdraw(amount: int, method: str = "sandbox") -> Awaitable[wallet_pb2.PaymentOperation]:
        return wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(
                amount=money(amount), idempotency_key=new_id("w"), payout_method=method
            ),
            metadata=as_player(player),
        )

    error = await rpc_error(
        wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(amount=money(100, "PLAY"), idempotency_key="play"),
            metadata=as_player(player),
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot be withdrawn" in (error.details() or "")
    error = await rpc_error(withdraw(6000))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "available balance" in (error.details() or "")
    error = await rpc_error(withdraw(100, "unverified-bank"))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "verification" in (error.details() or "")

    await wallet.stub.FreezeAccount(
        wallet_pb2.FreezeAccountRequest(account_id=player, reason="collusion review", alert_id="a1")
    )
    error = await rpc_error(withdraw(100))
    assert "frozen" in (error.details() or "")
    frozen = await wallet.stub.GetBalances(
        wallet_pb2.GetBalancesRequest(), metadata=as_player(player)
    )
    assert frozen.frozen
    await wallet.stub.UnfreezeAccount(wallet_pb2.UnfreezeAccountRequest(account_id=player))

    operation = await withdraw(1500)
    assert operation.status == wallet_pb2.PAYMENT_STATUS_PENDING
    await wait_for_balance(wallet.stub, player, 3500)  # taken at once, paid out later


async def test_deposit_limit_decrease_applies_now_increase_after_a_day(wallet: Wallet) -> None:
    player = new_id()
    meta = as_player(player)
    limit = await wallet.stub.SetDepositLimit(
        wallet_pb2.SetDepositLimitRequest(period=DAY, limit=money(1000)), metadata=meta
    )
    assert limit.current.minor_units == 1000
    await fund(wallet.stub, player, 800)
    error = await rpc_error(
        wallet.stub.Deposit(
            wallet_pb2.DepositRequest(amount=money(300), idempotency_key="over"), metadata=meta
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "up to 2.00 USD" in (error.details() or "")

    raised = await wallet.stub.SetDepositLimit(
        wallet_pb2.SetDepositLimitRequest(period=DAY, limit=money(5000)), metadata=meta
    )
    assert raised.current.minor_units == 1000
    assert raised.pending.minor_units == 5000
    assert raised.pending_effective_at.ToDatetime() - wallet.clock.now().replace(
        tzinfo=None
    ) == timedelta(hours=24)
    listed = await wallet.stub.ListDepositLimits(
        wallet_pb2.ListDepositLimitsRequest(), metadata=meta
    )
    assert [(item.current.minor_units, item.used.minor_units) for item in listed.limits] == [
        (1000, 800)
    ]


async def test_holds_cover_the_largest_loss_and_refuse_what_cannot_be_covered(
    wallet: Wallet,
) -> None:
    player, table = new_id(), new_id("t")
    await fund(wallet.stub, player, 10_000)
    hold = await place_hold(wallet.stub, player, 1500, table)  # $5 x cube 1 x backgammon
    assert hold.status == wallet_pb2.HOLD_STATUS_OPEN
    assert await balance(wallet.stub, player) == (8500, 1500)

    cover = await wallet.stub.CanCover(
        wallet_pb2.CanCoverRequest(account_id=player, amount=money(12_000), hold_id=hold.hold_id)
    )
    assert not cover.can_cover
    assert cover.shortfall.minor_units == 2000
    assert "short" in cover.reason

    raised = await wallet.stub.RaiseHold(
        wallet_pb2.RaiseHoldRequest(hold_id=hold.hold_id, new_amount=money(3000), game_id="g")
    )
    assert raised.amount.minor_units == 3000
    again = await wallet.stub.RaiseHold(
        wallet_pb2.RaiseHoldRequest(hold_id=hold.hold_id, new_amount=money(3000), game_id="g")
    )
    assert again.amount.minor_units == 3000
    assert await balance(wallet.stub, player) == (7000, 3000)
    error = await rpc_error(
        wallet.stub.RaiseHold(
            wallet_pb2.RaiseHoldRequest(hold_id=hold.hold_id, new_amount=money(20_000))
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot double or take" in (error.details() or "")

    released = await wallet.stub.ReleaseHold(
        wallet_pb2.ReleaseHoldRequest(hold_id=hold.hold_id, reason="table closed")
    )
    assert released.status == wallet_pb2.HOLD_STATUS_RELEASED
    await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=hold.hold_id))
    assert await balance(wallet.stub, player) == (10_000, 0)


async def test_hold_errors_name_the_problem(wallet: Wallet) -> None:
    player = new_id()
    await fund(wallet.stub, player, 1000)
    error = await rpc_error(place_hold(wallet.stub, player, 5000, new_id("t")))
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "deposit 40.00 USD more" in (error.details() or "")
    error = await rpc_error(
        wallet.stub.RaiseHold(wallet_pb2.RaiseHoldRequest(hold_id="nope", new_amount=money(1)))
    )
    assert error.code() == grpc.StatusCode.NOT_FOUND
    error = await rpc_error(place_hold(wallet.stub, player, 100, ""))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    await wallet.stub.FreezeAccount(wallet_pb2.FreezeAccountRequest(account_id=player, reason="x"))
    error = await rpc_error(place_hold(wallet.stub, player, 100, new_id("t")))
    assert "frozen" in (error.details() or "")


async def test_quote_commission_matches_the_schedule_examples(wallet: Wallet) -> None:
    single = await wallet.stub.QuoteCommission(
        wallet_pb2.QuoteCommissionRequest(
            kind=wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
            stake=money(500),
            cube_value=1,
            result=game_pb2.RESULT_TYPE_GAMMON,
            rating_a=1500,
            rating_b=1500,
        ),
        metadata=as_player(new_id()),
    )
    assert (single.rate, single.commission_per_player.minor_units) == ("0.049", 49)
    assert (single.winner_credit.minor_units, single.loser_debit.minor_units) == (902, 1000)
    series = await wallet.stub.QuoteCommission(
        wallet_pb2.QuoteCommissionRequest(
            kind=wallet_pb2.SETTLEMENT_KIND_SERIES,
            stake=money(1000),
            match_length=3,
            rating_a=1500,
            rating_b=1500,
        ),
        metadata=as_player(new_id()),
    )
    assert (series.rate, series.commission_per_player.minor_units) == ("0.059", 59)
    assert (series.winner_credit.minor_units, series.loser_debit.minor_units) == (882, 1000)
    error = await rpc_error(
        wallet.stub.QuoteCommission(
            wallet_pb2.QuoteCommissionRequest(stake=money(100)), metadata=as_player(new_id())
        )
    )
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_self_exclusion_from_the_accounts_service_blocks_deposits_and_play(
    wallet: Wallet,
) -> None:
    player = new_id()
    await fund(wallet.stub, player, 1000)
    fact = account_events.AccountSelfExcluded(account_id=player)
    fact.until.FromDatetime(wallet.clock.now() + timedelta(days=30))
    fact.occurred_at.FromDatetime(wallet.clock.now())
    consumer = direct_accounts_consumer(wallet.url, wallet.clock)
    try:
        assert await consumer.consumer.handle(received(fact, topic="tavla.accounts.v1"))
    finally:
        await consumer.close()
    error = await rpc_error(
        wallet.stub.Deposit(
            wallet_pb2.DepositRequest(amount=money(100), idempotency_key="x"),
            metadata=as_player(player),
        )
    )
    assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "self-excluded until" in (error.details() or "")
    error = await rpc_error(place_hold(wallet.stub, player, 100, new_id("t")))
    assert "cannot play" in (error.details() or "")
    # Money already in the account stays the player's: withdrawing is still allowed.
    await wallet.stub.Withdraw(
        wallet_pb2.WithdrawRequest(amount=money(1000), idempotency_key="out"),
        metadata=as_player(player),
    )
    await wait_for_balance(wallet.stub, player, 0)


async def test_every_money_event_is_recorded_with_its_change(wallet: Wallet) -> None:
    player = new_id()
    meta = as_player(player)
    await fund(wallet.stub, player, 5000)
    hold = await place_hold(wallet.stub, player, 300, new_id("t"))
    await wallet.stub.RaiseHold(
        wallet_pb2.RaiseHoldRequest(hold_id=hold.hold_id, new_amount=money(600))
    )
    await wallet.stub.ReleaseHold(wallet_pb2.ReleaseHoldRequest(hold_id=hold.hold_id, reason="x"))
    await wallet.stub.SetDepositLimit(
        wallet_pb2.SetDepositLimitRequest(period=DAY, limit=money(10_000)), metadata=meta
    )
    for method in ("sandbox", "sandbox-decline"):
        await wallet.stub.Withdraw(
            wallet_pb2.WithdrawRequest(
                amount=money(1000), idempotency_key=method, payout_method=method
            ),
            metadata=meta,
        )
    # The declined payout comes back: 5000 - 1000 paid out.
    await wait_for_balance(wallet.stub, player, 4000)
    async with asyncio.timeout(20):  # both payouts answered (their order is the provider's)
        while "WithdrawalCompleted" not in await outbox_events(wallet.url, player):
            await asyncio.sleep(0.05)
    await wallet.stub.FreezeAccount(wallet_pb2.FreezeAccountRequest(account_id=player, reason="r"))
    await wallet.stub.FreezeAccount(wallet_pb2.FreezeAccountRequest(account_id=player, reason="r"))
    await wallet.stub.UnfreezeAccount(wallet_pb2.UnfreezeAccountRequest(account_id=player))
    events = await outbox_events(wallet.url, player)
    assert events.count("Deposited") == 1  # the duplicate callback changed nothing
    assert events[:5] == ["Deposited", "HoldPlaced", "HoldRaised", "HoldReleased", "LimitChanged"]
    assert sorted(events[5:9]) == [
        "WithdrawalCompleted",
        "WithdrawalFailed",
        "WithdrawalRequested",
        "WithdrawalRequested",
    ]
    assert events[9:] == ["AccountFrozen", "AccountUnfrozen"]
    assert await audit_database(wallet.url) == ()
