"""``tavla wallet reconcile`` (the real command, as a subprocess) against the provider on loopback.

Payments whose webhooks never came are settled or failed from the provider's
answer, each exactly once: a second run changes nothing more. Also: ``tavla
serve wallet`` without a payment provider chosen exits non-zero naming the variable.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.wallet.audit_cli import audit_database
from tavla.wallet.v1 import wallet_pb2
from tests.support.identity import service_env
from tests.support.payment_provider import (
    API_KEY,
    SECRET,
    PaidWallet,
    deposit,
    paid_wallet,
    settle,
)
from tests.support.services import RunningService
from tests.support.wallet import as_player, balance, money, new_id, outbox_events


@pytest.fixture(scope="module")
async def paid(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[PaidWallet]:
    async with paid_wallet(postgres_server, kafka_broker, geo_service.address) as running:
        yield running


async def tavla(*argv: str, env: dict[str, str]) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "services.cli",
        *argv,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def provider_env(paid: PaidWallet, secrets: Path) -> dict[str, str]:
    (secrets / "api-key").write_text(API_KEY + "\n")
    (secrets / "webhook-secret").write_bytes(SECRET)
    return {
        "TAVLA_DATABASE_URL": paid.url,
        "TAVLA_WALLET_PAYMENT_PROVIDER": "http",
        "TAVLA_WALLET_PROVIDER_URL": paid.provider.base_url,
        "TAVLA_WALLET_PROVIDER_API_KEY_FILE": str(secrets / "api-key"),
        "TAVLA_WALLET_WEBHOOK_SECRET_FILE": str(secrets / "webhook-secret"),
    }


async def statuses(url: str, ids: list[str]) -> dict[str, str]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT id, status FROM payments WHERE id = ANY(:ids)"), {"ids": ids}
            )
            return {row.id: row.status for row in rows}
    finally:
        await engine.dispose()


async def transfer_count(url: str) -> int:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return int(await connection.scalar(text("SELECT count(*) FROM transfers")) or 0)
    finally:
        await engine.dispose()


async def test_reconcile_settles_or_fails_each_stuck_payment_exactly_once(
    paid: PaidWallet, tmp_path: Path
) -> None:
    player = new_id()
    await settle(paid, await deposit(paid, player, 5000))
    settled, failed, pending = [await deposit(paid, player, cents) for cents in (700, 300, 200)]
    paid.provider.verified.add((player, "iban-1"))
    payout = await paid.stub.Withdraw(
        wallet_pb2.WithdrawRequest(
            amount=money(1000), idempotency_key=new_id("w"), payout_method="iban-1"
        ),
        metadata=as_player(player),
    )
    withdrawal = payout.operation_id
    # The provider finished these, but its webhooks were lost.
    paid.provider.decided[settled] = {"status": "settled"}
    paid.provider.decided[failed] = {"status": "failed", "failure_reason": "card expired"}
    paid.provider.decided[withdrawal] = {"status": "failed", "failure_reason": "IBAN closed"}
    # One the provider never received (the wallet crashed before handing it over).
    paid.provider.submissions.pop(pending)
    still_pending = await deposit(paid, player, 100)
    assert await balance(paid.stub, player) == (4000, 0)

    env = provider_env(paid, tmp_path)
    code, out, err = await tavla("wallet", "reconcile", "--older-than-minutes", "5", env=env)
    assert code == 0, err
    report = json.loads(out.strip().splitlines()[-1])
    assert (report["settled"], report["failed"], report["errors"]) == (1, 3, 0), report
    assert report["pending"] >= 1
    ids = [settled, failed, pending, withdrawal, still_pending]
    assert await statuses(paid.url, ids) == {
        settled: "confirmed",
        failed: "failed",
        pending: "failed",
        withdrawal: "failed",
        still_pending: "requested",
    }
    # 5000 + 700 settled; the failed payout's 1000 came back; nothing else moved.
    assert await balance(paid.stub, player) == (5700, 0)
    transfers = await transfer_count(paid.url)

    code, out, err = await tavla("wallet", "reconcile", "--older-than-minutes", "5", env=env)
    assert code == 0, err
    again = json.loads(out.strip().splitlines()[-1])
    assert (again["settled"], again["failed"]) == (0, 0), again
    assert await balance(paid.stub, player) == (5700, 0)
    assert await transfer_count(paid.url) == transfers
    events = await outbox_events(paid.url, player)
    assert events.count("Deposited") == 2
    assert events.count("WithdrawalFailed") == 1
    assert await audit_database(paid.url) == ()


async def test_reconcile_without_a_provider_names_the_variable(paid: PaidWallet) -> None:
    code, _, err = await tavla(
        "wallet",
        "reconcile",
        env={"TAVLA_DATABASE_URL": paid.url, "TAVLA_WALLET_PAYMENT_PROVIDER": ""},
    )
    assert code == 2
    assert "TAVLA_WALLET_PAYMENT_PROVIDER is required" in err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({}, "TAVLA_WALLET_PAYMENT_PROVIDER is required but not set"),
        ({"TAVLA_WALLET_PAYMENT_PROVIDER": "stripe"}, "must be one of http, sandbox"),
        ({"TAVLA_WALLET_PAYMENT_PROVIDER": "http"}, "TAVLA_WALLET_PROVIDER_URL is required"),
        (
            {
                "TAVLA_WALLET_PAYMENT_PROVIDER": "http",
                "TAVLA_WALLET_PROVIDER_URL": "https://psp.example",
                "TAVLA_WALLET_PROVIDER_API_KEY_FILE": "/nonexistent/key",
            },
            "TAVLA_WALLET_PROVIDER_API_KEY_FILE=/nonexistent/key: cannot read",
        ),
        (
            {
                "TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox",
                "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "true",
            },
            "refused unless TAVLA_NOT_PRODUCTION=true",
        ),
    ],
)
async def test_serve_wallet_refuses_to_start_without_a_real_provider_choice(
    extra: dict[str, str], words: str
) -> None:
    # Nothing listens on these: the process must stop on its settings before connecting.
    # Its service key is in order, so the payment settings are what it stops on.
    env = {
        **service_env("wallet"),
        "TAVLA_ACCOUNTS_ADDRESS": "127.0.0.1:9",
        "TAVLA_DATABASE_URL": "postgresql+asyncpg://tavla@127.0.0.1:9/tavla_wallet",
        "TAVLA_KAFKA_BOOTSTRAP": "127.0.0.1:9",
        "TAVLA_WALLET_PAYMENT_PROVIDER": "",
        "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "",
        "TAVLA_NOT_PRODUCTION": "",
        **extra,
    }
    code, _, err = await tavla("serve", "wallet", env=env)
    assert code == 2, err
    assert words in err
