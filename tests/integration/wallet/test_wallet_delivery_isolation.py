"""One payment the database refuses holds back no other, on the real wallet and PostgreSQL.

The poison is a deposit whose confirmation overflows its player's balance (credits
past 2^63 - 1, "bigint out of range" in PostgreSQL), written straight into the
payments table as one recorded before amounts were bounded would be. The sandbox
provider's delivery loop used to stop at it on every round, oldest first, so no
later deposit in any currency was ever confirmed; ``tavla wallet reconcile``
stopped at it too. Now it is retried with back-off and counted while the others
are confirmed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.clock import ManualClock
from services.wallet.domain.ledger import player_account_id
from services.wallet.provider import SandboxConfig
from services.wallet.provider_config import PaymentSettings
from services.wallet.reconcile import reconcile_database
from tests.support.services import migrated_database
from tests.support.wallet import GAME_STARTED_AT, Wallet, fund, new_id

INT64_MAX = 2**63 - 1


async def record_deposit(
    url: str, player: str, currency: str, amount: int, age: timedelta
) -> str:
    """A requested deposit, written as the wallet records one (with the player's account),
    ``age`` before the game clock."""
    payment_id = new_id("pay")
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text(
                    "INSERT INTO ledger_accounts (id, kind, currency, owner, debits, credits,"
                    " version) VALUES (:id, 'player', :currency, :player, 0, 0, 0)"
                    " ON CONFLICT DO NOTHING"
                ),
                {"id": player_account_id(player, currency), "currency": currency, "player": player},
            )
            await connection.execute(
                text(
                    "INSERT INTO payments (id, kind, player_id, currency, amount, status, method,"
                    " provider, idempotency_key, created_at, updated_at) VALUES (:id, 'deposit',"
                    " :player, :currency, :amount, 'requested', 'card', 'sandbox', :id, :at, :at)"
                ),
                {
                    "id": payment_id,
                    "player": player,
                    "currency": currency,
                    "amount": amount,
                    "at": GAME_STARTED_AT - age,
                },
            )
    finally:
        await engine.dispose()
    return payment_id


async def status_of(url: str, payment_id: str) -> str:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            status = await connection.scalar(
                text("SELECT status FROM payments WHERE id = :id"), {"id": payment_id}
            )
    finally:
        await engine.dispose()
    return str(status)


async def test_a_poison_payment_is_retried_while_every_other_deposit_is_confirmed(
    wallet: Wallet,
) -> None:
    rich = new_id()
    await fund(wallet.stub, rich, 1000, "EUR")
    # The oldest payment waiting: the loop meets it first on every round.
    poison = await record_deposit(wallet.url, rich, "EUR", INT64_MAX, timedelta(days=1))
    for currency in ("USD", "EUR", "GBP"):
        await fund(wallet.stub, new_id(), 1000, currency)  # each waits for its confirmation
    await fund(wallet.stub, rich, 500, "EUR")  # even the poisoned player's next deposit
    assert await status_of(wallet.url, poison) == "requested"  # still waiting, not lost
    failed = REGISTRY.get_sample_value("tavla_wallet_sandbox_deliveries_failed_total")
    assert failed is not None and failed >= 1


async def test_reconcile_counts_a_poison_payment_and_settles_the_others(
    postgres_server: Any,
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "reconcile", "wallet"))
    player = new_id()
    # Two deposits at the int64 limit for one player: whichever comes second overflows.
    first = await record_deposit(url, player, "GBP", INT64_MAX, timedelta(hours=3))
    second = await record_deposit(url, player, "GBP", INT64_MAX, timedelta(hours=2))
    others = [
        await record_deposit(url, new_id(), currency, 1000, timedelta(hours=1))
        for currency in ("USD", "EUR")
    ]
    settings = PaymentSettings.sandboxed(SandboxConfig(real_money_unsafe=True))
    clock = ManualClock(GAME_STARTED_AT)
    report = await reconcile_database(url, settings, timedelta(minutes=10), clock)
    assert report.checked == 4 and report.errors >= 1
    assert [await status_of(url, payment) for payment in others] == ["confirmed", "confirmed"]
    assert "requested" in {await status_of(url, first), await status_of(url, second)}
