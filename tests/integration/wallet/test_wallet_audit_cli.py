"""`tavla wallet audit` on a real database: clean books exit 0, each corruption is named."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from tavla.wallet.v1 import wallet_pb2
from tests.support.wallet import Side, Wallet, fund, game_ended, new_id, place_hold


async def run_audit(url: str) -> subprocess.CompletedProcess[str]:
    """The real command line, as an operator (or a CronJob) runs it."""
    environment = {**os.environ, "TAVLA_DATABASE_URL": url}
    command = [sys.executable, "-m", "services.cli", "wallet", "audit"]
    return await asyncio.to_thread(
        subprocess.run, command, env=environment, capture_output=True, text=True, timeout=60
    )


async def execute(url: str, sql: str, **params: object) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.begin() as connection:
            await connection.execute(text(sql), params)
    finally:
        await engine.dispose()


async def test_audit_passes_on_clean_books_and_names_each_breach(wallet: Wallet) -> None:
    winner, loser, table = Side(new_id()), Side(new_id()), new_id("t")
    for side in (winner, loser):
        await fund(wallet.stub, side.player_id, 3000)
    holds = [await place_hold(wallet.stub, s.player_id, 1500, table) for s in (winner, loser)]
    ended = game_ended(
        winner=Side(winner.player_id, hold_id=holds[0].hold_id),
        loser=Side(loser.player_id, hold_id=holds[1].hold_id),
        stake=500,
        table_id=table,
    )
    assert await wallet.consumer.handle(ended)

    clean = await run_audit(wallet.url)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.strip() == "audit ok"

    account = f"player:{winner.player_id}:USD"
    await execute(
        wallet.url, "UPDATE ledger_accounts SET credits = credits + 500 WHERE id = :id", id=account
    )
    broken = await run_audit(wallet.url)
    assert broken.returncode == 1
    assert f"balance_differs_from_entries: {account}" in broken.stdout
    assert "currency_not_balanced: USD" in broken.stdout
    await execute(
        wallet.url, "UPDATE ledger_accounts SET credits = credits - 500 WHERE id = :id", id=account
    )
    assert (await run_audit(wallet.url)).returncode == 0


async def test_audit_names_a_hold_left_open_after_its_table_settled(wallet: Wallet) -> None:
    first, second, onlooker, table = new_id(), new_id(), new_id(), new_id("t")
    for player in (first, second, onlooker):
        await fund(wallet.stub, player, 2000)
    stray = await place_hold(wallet.stub, onlooker, 300, table)
    ended = game_ended(winner=Side(first), loser=Side(second), stake=100, table_id=table)
    assert await wallet.consumer.handle(ended)

    result = await run_audit(wallet.url)
    assert result.returncode == 1
    assert f"hold_without_live_table: {stray.hold_id}" in result.stdout
    await wallet.stub.ReleaseHold(
        wallet_pb2.ReleaseHoldRequest(hold_id=stray.hold_id, reason="table closed")
    )
    assert (await run_audit(wallet.url)).returncode == 0


async def test_audit_reports_an_unreachable_database() -> None:
    result = await run_audit("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    assert result.returncode == 2
    assert "cannot read the wallet database" in result.stderr
