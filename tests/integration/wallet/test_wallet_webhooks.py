"""The real payment-provider adapter against a real HTTP provider of our own on loopback.

The wallet runs with ``TAVLA_WALLET_PAYMENT_PROVIDER=http`` settings on real
PostgreSQL and the broker; the provider (``tests/support/payment_provider``)
takes its submissions and signs webhooks to the wallet's listener. A good
webhook settles once; a redelivered one changes nothing; a bad signature, a
replay outside the window, an unknown payment and an out-of-order or
contradicting event are each refused with a clear answer and change nothing:
the payment row, the ledger and the processed-event table stay as they were,
and the audit stays clean.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import aiohttp
import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import events_pb2 as wallet_events
from tavla.wallet.v1 import wallet_pb2
from tests.support.payment_provider import PaidWallet, deposit, paid_wallet, settle
from tests.support.services import RunningService
from tests.support.wallet import (
    as_player,
    balance,
    money,
    new_id,
    outbox_events,
)


@pytest.fixture(scope="module")
async def paid(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[PaidWallet]:
    async with paid_wallet(postgres_server, kafka_broker, geo_service.address) as running:
        yield running


async def snapshot(url: str, payment_id: str) -> dict[str, Any]:
    """What a refused webhook must leave alone: the payment row, transfers, events seen."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            row = (
                await connection.execute(
                    text(
                        "SELECT status, provider_reference, updated_at FROM payments WHERE id = :id"
                    ),
                    {"id": payment_id},
                )
            ).first()
            transfers = await connection.scalar(text("SELECT count(*) FROM transfers"))
            events = await connection.scalar(text("SELECT count(*) FROM provider_events"))
            outbox = await connection.scalar(text("SELECT count(*) FROM outbox"))
    finally:
        await engine.dispose()
    return {
        "payment": None if row is None else tuple(row),
        "transfers": transfers,
        "events": events,
        "outbox": outbox,
    }


async def test_a_signed_settlement_credits_once_and_a_redelivery_changes_nothing(
    paid: PaidWallet,
) -> None:
    player = new_id()
    payment_id = await deposit(paid, player, 2500)
    submitted = paid.provider.submissions[payment_id]
    assert submitted["amount"] == {"minor_units": 2500, "currency": "USD"}
    assert submitted["player_id"] == player
    assert await balance(paid.stub, player) == (0, 0)  # nothing before the provider says so

    now = paid.clock.now()
    delivery = paid.provider.signed(paid.provider.event(payment_id, "settled", now), now)
    status, answer = await paid.provider.deliver(delivery)
    assert (status, answer) == (200, {"status": "applied", "payment_status": "confirmed"})
    assert await balance(paid.stub, player) == (2500, 0)
    before = await snapshot(paid.url, payment_id)

    # The provider retries the very same delivery (it never saw our 200): applied once.
    status, answer = await paid.provider.deliver(delivery)
    assert (status, answer["status"]) == (200, "duplicate")
    assert await balance(paid.stub, player) == (2500, 0)
    assert await snapshot(paid.url, payment_id) == before
    assert (await outbox_events(paid.url, player)).count("Deposited") == 1
    assert await audit_database(paid.url) == ()


async def test_bad_signatures_are_refused_and_change_nothing(paid: PaidWallet) -> None:
    player = new_id()
    payment_id = await deposit(paid, player, 1000)
    before = await snapshot(paid.url, payment_id)
    now = paid.clock.now()
    event = paid.provider.event(payment_id, "settled", now)

    wrong_secret = paid.provider.signed(event, now, secret=b"not-the-secret")
    tampered = paid.provider.signed(event, now)
    tampered.body = tampered.body.replace(b"settled", b"failed")  # signed one thing, says another
    unsigned = paid.provider.signed(event, now)
    del unsigned.headers["Tavla-Signature"]
    garbled = paid.provider.signed(event, now)
    garbled.headers["Tavla-Signature"] = "v1=abc"

    for delivery, words in [
        (wrong_secret, "does not match"),
        (tampered, "does not match"),
        (unsigned, "no Tavla-Signature header"),
        (garbled, "t=<unix seconds>"),
    ]:
        status, answer = await paid.provider.deliver(delivery)
        assert status == 401, answer
        assert words in answer["error"]
    assert await snapshot(paid.url, payment_id) == before
    assert await balance(paid.stub, player) == (0, 0)
    async with aiohttp.ClientSession() as session, session.get(paid.service.metrics_url) as reply:
        metrics = await reply.text()
    assert 'tavla_wallet_webhooks_total{outcome="bad_signature"}' in metrics


async def test_a_replay_outside_the_window_is_refused(paid: PaidWallet) -> None:
    player = new_id()
    payment_id = await deposit(paid, player, 1200)
    signed_at = paid.clock.now()
    stale = paid.provider.signed(paid.provider.event(payment_id, "settled", signed_at), signed_at)
    before = await snapshot(paid.url, payment_id)
    paid.clock.advance(timedelta(minutes=5, seconds=1))  # just past the 5-minute window
    status, answer = await paid.provider.deliver(stale)
    assert status == 401
    assert "replay window" in answer["error"]
    assert await snapshot(paid.url, payment_id) == before
    assert await balance(paid.stub, player) == (0, 0)


async def test_a_webhook_about_an_unknown_payment_is_refused(paid: PaidWallet) -> None:
    now = paid.clock.now()
    before = await snapshot(paid.url, "no-such-payment")
    status, answer = await paid.provider.deliver(
        paid.provider.signed(paid.provider.event("no-such-payment", "settled", now), now)
    )
    assert status == 404
    assert "never recorded" in answer["error"]
    assert await snapshot(paid.url, "no-such-payment") == before


async def test_a_malformed_event_is_refused(paid: PaidWallet) -> None:
    now = paid.clock.now()
    event = paid.provider.event("p", "refunded", now)
    status, answer = await paid.provider.deliver(paid.provider.signed(event, now))
    assert status == 400
    assert "payment.failed, payment.settled" in answer["error"]


async def test_out_of_order_and_contradicting_events_are_refused(paid: PaidWallet) -> None:
    player = new_id()
    payment_id = await deposit(paid, player, 4000)
    t0 = paid.clock.now()
    paid.clock.advance(timedelta(seconds=10))
    now = paid.clock.now()
    settled = paid.provider.event(payment_id, "settled", t0 + timedelta(seconds=5))
    status, _ = await paid.provider.deliver(paid.provider.signed(settled, now))
    assert status == 200
    before = await snapshot(paid.url, payment_id)

    # An older event (a retry of something the provider sent before): refused, even
    # though it would not contradict, because an old word never overrides a newer one.
    older = paid.provider.event(payment_id, "settled", t0 + timedelta(seconds=1))
    status, answer = await paid.provider.deliver(paid.provider.signed(older, now))
    assert status == 409
    assert answer["reason"] == "OUT_OF_ORDER_CALLBACK"
    # "failed" after "settled": refused for an operator to look at; the money stays.
    failed = paid.provider.event(payment_id, "failed", t0 + timedelta(seconds=8))
    status, answer = await paid.provider.deliver(paid.provider.signed(failed, now))
    assert status == 409
    assert "already confirmed" in answer["error"]
    assert await snapshot(paid.url, payment_id) == before
    assert await balance(paid.stub, player) == (4000, 0)
    assert await audit_database(paid.url) == ()


async def test_a_failed_withdrawal_gives_the_money_back_once(paid: PaidWallet) -> None:
    player = new_id()
    await settle(paid, await deposit(paid, player, 3000))
    paid.provider.verified.add((player, "iban-DE89"))
    operation = await paid.stub.Withdraw(
        wallet_pb2.WithdrawRequest(
            amount=money(1000), idempotency_key=new_id("w"), payout_method="iban-DE89"
        ),
        metadata=as_player(player),
    )
    assert await balance(paid.stub, player) == (2000, 0)
    await settle(paid, operation.operation_id, "failed")
    assert await balance(paid.stub, player) == (3000, 0)
    assert await audit_database(paid.url) == ()


async def test_only_the_provider_decides_whether_a_payout_destination_is_verified(
    paid: PaidWallet,
) -> None:
    player = new_id()
    await settle(paid, await deposit(paid, player, 3000))

    async def withdraw(method: str) -> wallet_pb2.PaymentOperation:
        operation: wallet_pb2.PaymentOperation = await paid.stub.Withdraw(
            wallet_pb2.WithdrawRequest(
                amount=money(500), idempotency_key=new_id("w"), payout_method=method
            ),
            metadata=as_player(player),
        )
        return operation

    # A plausible name proves nothing: the provider has not verified it.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await withdraw("iban-GB33")
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "verification" in (refused.value.details() or "")
    paid.provider.verified.add((player, "iban-GB33"))
    assert (await withdraw("iban-GB33")).status == wallet_pb2.PAYMENT_STATUS_PENDING
    assert await balance(paid.stub, player) == (2500, 0)


async def test_play_money_is_not_bought_through_the_provider(paid: PaidWallet) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await paid.stub.Deposit(
            wallet_pb2.DepositRequest(amount=money(100, "PLAY"), idempotency_key="play"),
            metadata=as_player(new_id()),
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "play-money top-up" in (refused.value.details() or "")


async def test_a_provider_refusal_reaches_the_player_with_its_reason(paid: PaidWallet) -> None:
    player = new_id()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await paid.stub.Deposit(
            wallet_pb2.DepositRequest(
                amount=money(900), idempotency_key="r", payment_method="card-refused"
            ),
            metadata=as_player(player),
        )
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "this card is not accepted" in (refused.value.details() or "")
    assert await balance(paid.stub, player) == (0, 0)


async def test_a_payment_the_database_refuses_fails_alone_and_says_so(paid: PaidWallet) -> None:
    """Its answer is not "database away" (503) but this event's failure (500), logged and
    counted; the provider retries it while another payment's webhook is applied."""
    poisoned, other = new_id(), new_id()
    poisoned_payment = await deposit(paid, poisoned, 1000)
    other_payment = await deposit(paid, other, 1000)
    engine = create_async_engine(paid.url)
    try:
        async with engine.begin() as connection:  # crediting this player passes 2^63 - 1
            await connection.execute(
                text("UPDATE ledger_accounts SET credits = 9223372036854775800 WHERE id = :id"),
                {"id": f"player:{poisoned}:USD"},
            )
    finally:
        await engine.dispose()
    before = await snapshot(paid.url, poisoned_payment)
    now = paid.clock.now()
    status, answer = await paid.provider.deliver(
        paid.provider.signed(paid.provider.event(poisoned_payment, "settled", now), now)
    )
    assert status == 500 and "could not apply this event" in answer["error"], answer
    assert (await snapshot(paid.url, poisoned_payment))["payment"] == before["payment"]
    await settle(paid, other_payment)
    assert await balance(paid.stub, other) == (1000, 0)


async def test_the_cards_fingerprint_is_kept_and_published_and_a_card_number_never_is(
    paid: PaidWallet,
) -> None:
    player = new_id()
    payment_id = await deposit(paid, player, 1500)
    before = await snapshot(paid.url, payment_id)
    now = paid.clock.now()

    # A provider that sends the card number (the industry's test Visa) where the
    # fingerprint belongs: refused as a malformed event, nothing kept.
    leaky = {**paid.provider.event(payment_id, "settled", now)}
    leaky["instrument_fingerprint"] = "4242424242424242"
    status, answer = await paid.provider.deliver(paid.provider.signed(leaky, now))
    assert status == 400 and "card number" in answer["error"], answer
    assert await snapshot(paid.url, payment_id) == before
    assert await balance(paid.stub, player) == (0, 0)

    good = {**paid.provider.event(payment_id, "settled", now)}
    good["instrument_fingerprint"] = "Xt5EWLLDS7FJjR1c"
    status, answer = await paid.provider.deliver(paid.provider.signed(good, now))
    assert (status, answer["status"]) == (200, "applied")
    engine = create_async_engine(paid.url)
    try:
        async with engine.connect() as connection:
            kept = await connection.scalar(
                text("SELECT instrument_fingerprint FROM payments WHERE id = :id"),
                {"id": payment_id},
            )
            payload = await connection.scalar(
                text("SELECT payload FROM outbox WHERE key = :k AND ce_type = :t"),
                {"k": player, "t": wallet_events.Deposited.DESCRIPTOR.full_name},
            )
    finally:
        await engine.dispose()
    assert kept == "Xt5EWLLDS7FJjR1c"
    published = wallet_events.Deposited.FromString(bytes(payload))
    assert (published.deposit_id, published.instrument_fingerprint) == (
        payment_id,
        "Xt5EWLLDS7FJjR1c",
    )
