"""The plans PostgreSQL really runs a test's statements with, nested ones included.

PostgreSQL's own ``auto_explain`` reports each statement's plan as a LOG message,
which the session sends to the client while ``client_min_messages`` is ``log``.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg  # type: ignore[import-untyped]


@asynccontextmanager
async def reported_plans(connection: asyncpg.Connection) -> AsyncIterator[list[str]]:
    """Collects the plans of every statement run on ``connection`` inside the block."""
    plans: list[str] = []

    def collect(_: Any, message: Any) -> None:
        plans.append(message.message)

    connection.add_log_listener(collect)
    await connection.execute(
        "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
        "SET auto_explain.log_nested_statements = on; SET client_min_messages = log"
    )
    try:
        yield plans
    finally:
        await connection.execute("RESET client_min_messages")
        connection.remove_log_listener(collect)


def sequential_scans(plans: list[str]) -> list[str]:
    """The tables the plans read sequentially, sorted."""
    return sorted(set(re.findall(r"Seq Scan on (\w+)", "\n".join(plans))))


def tables_touched(plans: list[str], tables: tuple[str, ...]) -> list[str]:
    """Those of ``tables`` that some plan names."""
    text = "\n".join(plans)
    return [table for table in tables if re.search(rf"\b{table}\b", text)]
