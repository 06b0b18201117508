"""Compliance officers for tests: the operator's real command makes one."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence

from tavla.antiabuse.v1 import events_pb2
from tests.support.kafka import consumed_past, mark_partitions


async def grant_role(database_url: str, email: str, role: str = "compliance") -> str:
    """``tavla accounts grant-role`` as an operator runs it, on the accounts database: its
    output (the command must succeed)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli", "accounts", "grant-role", "--email", email,
        "--role", role, "--by", "ops-test",
        env={**os.environ, "TAVLA_DATABASE_URL": database_url},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


VERDICTS = "tavla.antiabuse.v1"


async def sanctions_consumed(bootstrap: str, groups: Sequence[str], timeout: float = 120) -> None:
    """Every group committed past a mark placed now on every partition of
    ``tavla.antiabuse.v1`` (a ComplianceAlert: no sanctions consumer handles it)."""
    placed = await mark_partitions(bootstrap, VERDICTS, events_pb2.ComplianceAlert(alert_id="mark"))
    async with asyncio.timeout(timeout):
        for group in groups:
            while not await consumed_past(bootstrap, group, VERDICTS, placed):
                await asyncio.sleep(0.2)
