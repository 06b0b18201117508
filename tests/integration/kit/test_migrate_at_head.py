"""A service start migrates through Alembic unless its database is already at the newest
revision: then it neither imports nor runs Alembic (``services.kit.migrate.upgrade_async``).
Any other state of the database (never migrated, behind, a revision the files do not hold)
goes through Alembic as before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic.util import CommandError

from services.kit.migrate import database_revisions, script_head, upgrade_async
from tests.support.services import migrate_step, new_database

REPO = Path(__file__).resolve().parents[3]
SERVICE = "game"

# A start in a process of its own, as `tavla serve` migrates: prints which revisions it left
# and whether Alembic was imported.
START = """
import asyncio, sys
from services.kit.migrate import database_revisions, upgrade_async
asyncio.run(upgrade_async(sys.argv[1], sys.argv[2]))
print(sorted(asyncio.run(database_revisions(sys.argv[2]))), "alembic" in sys.modules)
"""


def start(url: str) -> str:
    done = subprocess.run([sys.executable, "-c", START, SERVICE, url], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.strip()


def tables(postgres_server: Any, database: str) -> set[str]:
    listed = postgres_server.psql(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public'", database)
    return set(listed.split())


async def test_a_start_at_head_skips_alembic_and_any_other_migrates(postgres_server: Any) -> None:
    head = script_head(SERVICE)
    assert head is not None
    database = new_database(postgres_server, "migrate_head")
    url = postgres_server.url(database)
    assert await database_revisions(url) == set()  # never migrated: no version table

    assert start(url) == f"['{head}'] True"  # a fresh database: Alembic migrates it
    migrated = tables(postgres_server, database)
    assert {"alembic_version", "outbox", "games"} <= migrated

    assert start(url) == f"['{head}'] False"  # at head: Alembic not even imported
    assert tables(postgres_server, database) == migrated

    await migrate_step(SERVICE, url, "down", "-1")  # one revision behind: Alembic again
    behind = await database_revisions(url)
    assert behind != {head}
    assert start(url) == f"['{head}'] True"
    assert tables(postgres_server, database) == migrated


async def test_a_revision_the_files_do_not_hold_is_left_to_alembic(postgres_server: Any) -> None:
    url = postgres_server.url(new_database(postgres_server, "migrate_unknown"))
    await upgrade_async(SERVICE, url)
    postgres_server.psql("UPDATE alembic_version SET version_num = 'ffff'",
                         url.rsplit("/", 1)[1])
    with pytest.raises(CommandError, match="ffff"):  # as before: Alembic's own refusal
        await upgrade_async(SERVICE, url)
