"""Compliance officers for tests: the operator's real command makes one."""

from __future__ import annotations

import asyncio
import os
import sys


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
