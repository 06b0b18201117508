"""Alembic environment shared by every service.

Each service keeps only its revisions (``services/<name>/migrations/``);
:mod:`services.kit.migrate` points Alembic here with that service's folder as
the version location. An advisory lock lets one replica migrate at a time.
"""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

_MIGRATION_LOCK = 7_362_821  # any constant; one migrator per database at a time


def _run(connection: Connection) -> None:
    connection.execute(text(f"SELECT pg_advisory_lock({_MIGRATION_LOCK})"))
    try:
        context.configure(connection=connection, transaction_per_migration=True)
        with context.begin_transaction():
            context.run_migrations()
    except BaseException:
        # The failed migration aborted the transaction; without this rollback the
        # unlock below would fail too and hide the migration's own error.
        connection.rollback()
        raise
    finally:
        connection.execute(text(f"SELECT pg_advisory_unlock({_MIGRATION_LOCK})"))
        connection.commit()


async def _migrate(url: str) -> None:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(_run)
            await connection.commit()
    finally:
        await engine.dispose()


asyncio.run(_migrate(context.config.get_main_option("sqlalchemy.url") or ""))
