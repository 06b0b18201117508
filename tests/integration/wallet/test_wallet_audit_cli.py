"""`tavla wallet audit` on a real database: clean books exit 0, each corruption is named."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from functools import partial
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.kit.clock import ManualClock
from services.wallet.audit_cli import audit_database
from services.wallet.domain.audit import audit
from services.wallet.domain.money import Money
from services.wallet.domain.payments import CallbackOutcome, ProviderCallback
from services.wallet.store.audit import AuditRepository
from services.wallet.store.unit_of_work import WalletUnitOfWork
from tavla.wallet.v1 import wallet_pb2
from tests.support.services import RunningService, migrated_database
from tests.support.wallet import (
    FROM_MALTA,
    GAME_STARTED_AT,
    Side,
    Wallet,
    direct_service,
    fund,
    game_ended,
    held_for_game,
    new_id,
    place_hold,
)


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
    game = new_id("g")
    players = [winner.player_id, loser.player_id]
    held = await held_for_game(wallet.stub, players, 1500, table, game)
    ended = game_ended(winner=held[0], loser=held[1], stake=500, table_id=table, game_id=game)
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
    game = new_id("g")
    winner, loser = await held_for_game(wallet.stub, [first, second], 300, table, game)
    ended = game_ended(winner=winner, loser=loser, stake=100, table_id=table, game_id=game)
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


async def test_the_sql_audit_finds_what_the_domain_audit_finds(
    postgres_server: Any, geo_service: RunningService
) -> None:
    """Every kind of breach that can be planted, in a fresh ledger: the SQL audit (what
    the command runs) and the domain's in-memory audit over a full snapshot name the
    same ones."""
    url = postgres_server.url(await migrated_database(postgres_server, "wallet_audit", "wallet"))
    clock = ManualClock(GAME_STARTED_AT)
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    uow = partial(WalletUnitOfWork, sessions, source="wallet", clock=clock)
    service, geo = direct_service(uow, clock, geo_service.address)
    players = [new_id() for _ in range(3)]
    try:
        for player in players:
            view = await service.deposit(
                player_id=player, amount=Money(5000, "USD"), idempotency_key="k", method="m",
                **FROM_MALTA,
            )
            await service.provider_callback(
                ProviderCallback(view.payment.id, CallbackOutcome.CONFIRMED, f"r-{player}")
            )
        held = [
            await service.place_hold(
                player_id=player, amount=Money(700, "USD"), table_id=f"t-{index}",
                game_id="", idempotency_key="h",
            )
            for index, player in enumerate(players[:2])
        ]  # fmt: skip
    finally:
        await geo.close()
        await engine.dispose()
    assert await audit_database(url) == ()
    first, second, third = (f"player:{player}:USD" for player in players)
    for sql in (
        "ALTER TABLE ledger_accounts DROP CONSTRAINT balance_not_negative",
        "ALTER TABLE transfers DROP CONSTRAINT transfers_credit_account_id_fkey",
        f"UPDATE ledger_accounts SET credits = credits + 500 WHERE id = '{first}'",
        f"UPDATE ledger_accounts SET debits = debits + 9000 WHERE id = '{second}'",
        "INSERT INTO transfers VALUES ('to-a-ghost', "
        f"'{third}', 'player:ghost:USD', 1, 'USD', 1, 'r', 'h', now())",
        f"UPDATE holds SET amount = 900 WHERE id = '{held[0].hold.id}'",
        "INSERT INTO settlements VALUES ('s', 'g', 1, 't-1', 'single', 'USD', NULL, NULL, 0, 0, "
        "'0', '', false, 'settled', NULL, 'e', now())",
    ):
        await execute(url, sql)

    breaches = await audit_database(url)
    reference_engine = create_async_engine(url, isolation_level="REPEATABLE READ")
    try:
        async with async_sessionmaker(reference_engine)() as session, session.begin():
            reference = audit(await AuditRepository(session).snapshot())
    finally:
        await reference_engine.dispose()
    assert sorted(breaches, key=repr) == sorted(reference, key=repr)
    # Every kind but an unbalanced transfer: a transfer has one amount, and its
    # entries are its two legs (migration 0006), so none can be planted.
    assert {breach.name for breach in breaches} == {
        "balance_differs_from_entries",
        "currency_not_balanced",
        "negative_balance",
        "entry_for_unknown_account",
        "hold_without_live_table",
        "held_stakes_differ_from_holds",
    }
