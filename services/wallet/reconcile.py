"""``tavla wallet reconcile``: settle or fail payments stuck waiting for the provider.

A webhook can be lost for good (the provider gave up retrying, the listener was
away for days). The job asks the provider about every payment of this provider
still pending after ``--older-than`` minutes and applies its answer through the
same use case as a callback, in one transaction per payment: settled or failed
once, pending left alone. A payment the provider never received is failed (a
deposit credited nothing; a withdrawal's money goes back to the player). One payment
that fails (refused by the wallet, or by the database) is counted in ``errors``
and left pending for the next run while the others are reconciled; the exit
status is then 1, which fails the CronJob's run (``TavlaWalletReconcileFailed``).
Run it again and it finds nothing more to do: what it settled is no longer pending, and
a repeated outcome changes nothing. A Kubernetes CronJob or an operator runs it
with the wallet's own settings (``TAVLA_DATABASE_URL`` and the provider's).
The events it records go out through the wallet's outbox relay.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict, dataclass
from datetime import timedelta
from functools import partial

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.kit.clock import Clock, SystemClock
from services.kit.config import ConfigError, Env
from services.kit.errors import DomainError
from services.kit.logging import get_logger
from services.kit.retry import is_transient
from services.wallet.domain.errors import WalletError
from services.wallet.domain.payments import PaymentStatus
from services.wallet.http_provider import HttpProvider
from services.wallet.main import build_provider
from services.wallet.payments import PaymentUseCases
from services.wallet.provider_config import PaymentSettings
from services.wallet.store.unit_of_work import WalletUnitOfWork

log = get_logger(__name__)
FAILED_SOME = 1
UNUSABLE = 2


@dataclass
class ReconcileReport:
    checked: int = 0
    settled: int = 0
    failed: int = 0
    pending: int = 0
    errors: int = 0


async def reconcile(
    payments: PaymentUseCases, clock: Clock, older_than: timedelta
) -> ReconcileReport:
    """Ask the provider about each payment pending since before ``now - older_than``."""
    report = ReconcileReport()
    for waiting in await payments.waiting_payments(clock.now() - older_than):
        report.checked += 1
        try:
            answer = await payments.provider.status(waiting)
            if answer is None:
                report.pending += 1
                continue
            before = waiting.payment.status
            payment = await payments.provider_callback(answer)
        except (WalletError, DomainError) as error:
            # A contradiction or an unreachable provider: this one waits for a person or
            # the next run; the others go on.
            report.errors += 1
            log.warning("reconcile_failed", payment=waiting.payment.id, error=str(error))
            continue
        except Exception as error:
            if is_transient(error):  # the database is away: nothing more can be done now
                raise
            # This payment's own fault (a value the database refuses): it stays pending for
            # the next run and a person (the exit status says so); the others go on.
            report.errors += 1
            log.error("reconcile_failed", payment=waiting.payment.id, error=repr(error))
            continue
        if payment.status == before:
            continue  # it settled by webhook meanwhile: nothing more to do
        if payment.status is PaymentStatus.CONFIRMED:
            report.settled += 1
        else:
            report.failed += 1
        log.info("reconciled", payment=payment.id, status=payment.status.value)
    return report


async def reconcile_database(
    url: str, settings: PaymentSettings, older_than: timedelta, clock: Clock | None = None
) -> ReconcileReport:
    clock = clock or SystemClock()
    engine = create_async_engine(url, pool_size=2, max_overflow=0)
    provider = build_provider(settings, clock)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    service = PaymentUseCases(
        partial(WalletUnitOfWork, sessions, source="wallet", clock=clock),
        clock=clock,
        provider=provider,
    )
    try:
        return await reconcile(service, clock, older_than)
    finally:
        if isinstance(provider, HttpProvider):
            await provider.close()
        await engine.dispose()


def run_reconcile(args: argparse.Namespace) -> int:
    try:
        url = Env().text("TAVLA_DATABASE_URL")
        settings = PaymentSettings.from_env()
    except ConfigError as error:
        print(f"tavla wallet reconcile: {error}", file=sys.stderr)
        return UNUSABLE
    older_than = timedelta(minutes=args.older_than_minutes)
    try:
        report = asyncio.run(reconcile_database(url, settings, older_than))
    except (OSError, SQLAlchemyError) as error:
        print(f"tavla wallet reconcile: cannot read the wallet database: {error}", file=sys.stderr)
        return UNUSABLE
    print(json.dumps(asdict(report)))
    return FAILED_SOME if report.errors else 0
