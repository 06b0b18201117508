"""Shutdown: cancelled background tasks get the grace period, a stuck one is named."""

from __future__ import annotations

import asyncio
import contextlib
import time

from services.kit.server import wait_cancelled


async def stubborn() -> None:
    """Swallows its first cancellation (a bug the shutdown must survive)."""
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.sleep(3600)
    await asyncio.sleep(3600)  # a second cancellation ends it: the test's clean-up


async def polite() -> None:
    await asyncio.sleep(3600)


async def test_a_task_that_ignores_cancellation_is_named_and_left_behind() -> None:
    tasks = [
        asyncio.create_task(stubborn(), name="stubborn"),
        asyncio.create_task(polite(), name="polite"),
    ]
    await asyncio.sleep(0)
    for task in tasks:
        task.cancel()
    started = time.monotonic()
    stuck = await wait_cancelled(tasks, seconds=1.0)
    assert stuck == ["stubborn"]
    assert time.monotonic() - started < 5  # the grace period, not for ever
    assert tasks[1].cancelled()
    tasks[0].cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await tasks[0]


async def test_tasks_that_finish_are_not_waited_for_longer() -> None:
    task = asyncio.create_task(polite(), name="polite")
    await asyncio.sleep(0)
    task.cancel()
    started = time.monotonic()
    assert await wait_cancelled([task], seconds=30.0) == []
    assert time.monotonic() - started < 1
