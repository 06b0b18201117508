"""``tavla wallet audit`` (registered in ``cli.py``): check every ledger invariant.

Checks one consistent snapshot (REPEATABLE READ) of ``TAVLA_DATABASE_URL`` with
the audit aggregated in SQL (:mod:`services.wallet.audit_sql`, the twin of the
domain's ``audit``) and prints each breach by its stable name. Exit 0
with ``audit ok`` when the books are sound, 1 when any invariant is broken, 2
when the database cannot be read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from services.kit.config import ConfigError, Env
from services.wallet.audit_sql import sql_audit
from services.wallet.domain.audit import Breach

BREACHED = 1
UNREADABLE = 2


async def audit_database(url: str) -> tuple[Breach, ...]:
    """The breaches in the wallet database at ``url`` (empty: the books are sound)."""
    # One REPEATABLE READ snapshot: balances, entries and holds seen at the same instant;
    # the sums are taken in the database, so only breaches come back, however large the ledger.
    engine = create_async_engine(
        url, pool_size=1, max_overflow=0, isolation_level="REPEATABLE READ"
    )
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            return await sql_audit(session)
    finally:
        await engine.dispose()


def run_audit(args: argparse.Namespace) -> int:
    try:
        url = Env().text("TAVLA_DATABASE_URL")
    except ConfigError as error:
        print(f"tavla wallet audit: {error}", file=sys.stderr)
        return UNREADABLE
    try:
        breaches = asyncio.run(audit_database(url))
    except (OSError, ValueError, SQLAlchemyError) as error:
        print(f"tavla wallet audit: cannot read the wallet database: {error}", file=sys.stderr)
        return UNREADABLE
    for breach in breaches:
        print(f"{breach.name}: {breach.subject}: {breach.detail}")
    if breaches:
        print(f"audit failed: {len(breaches)} breach(es)", file=sys.stderr)
        return BREACHED
    print("audit ok")
    return 0
