"""Closing what a service opened when it stops: a background loop that waits for the end.

``run_service`` cancels the wiring's background loops at shutdown, after the
gRPC server stopped taking calls; a loop from :func:`close_at_shutdown` then runs
its ``close`` (a client channel, a pool), so nothing is closed under a call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any


def close_at_shutdown(
    close: Callable[[], Awaitable[None]],
) -> Callable[[], Coroutine[Any, Any, None]]:
    """A background loop for :class:`~services.kit.server.Wiring` that runs ``close`` at the end."""

    async def wait_then_close() -> None:
        try:
            await asyncio.Event().wait()
        finally:
            await close()

    return wait_then_close
