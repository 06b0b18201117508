"""Isolating a failing item in a loop over many: is the fault the item's, and when to retry it.

A loop that processes many items (events, payments, callbacks) must not stop at
the first one that fails. Two kinds of failure need two answers:

- the database or the network is away (:func:`is_transient`): nothing can be done
  for any item; the loop stops this round and tries again later, as before;
- anything else is the item's own (a value the database refuses, a bug a
  particular input reaches): that item is recorded and retried with a growing
  back-off (:class:`Backoff`), and the loop goes on with the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import exc as sql_errors


def is_transient(error: BaseException) -> bool:
    """A fault of the database or network, not of the item being processed (a group of
    failures, as a task group raises, when every one of them is)."""
    if isinstance(error, BaseExceptionGroup):
        return all(is_transient(member) for member in error.exceptions)
    if isinstance(error, OSError | sql_errors.InterfaceError | sql_errors.OperationalError):
        return True
    if isinstance(error, sql_errors.TimeoutError):  # the connection pool's
        return True
    return isinstance(error, sql_errors.DBAPIError) and error.connection_invalidated


class Backoff:
    """Per item: after its n-th failure in a row it waits ``base * 2**(n-1)`` (at most ``cap``)."""

    def __init__(
        self,
        base_seconds: float,
        cap_seconds: float,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base = base_seconds
        self._cap = cap_seconds
        self._now = now
        self._failing: dict[str, tuple[int, float]] = {}

    def due(self, item: str) -> bool:
        """Whether ``item`` may be tried now (never failed, or its wait is over)."""
        failing = self._failing.get(item)
        return failing is None or failing[1] <= self._now()

    def failed(self, item: str) -> int:
        """Record a failure; returns how many in a row ``item`` has had."""
        failures = self._failing.get(item, (0, 0.0))[0] + 1
        wait = min(self._base * 2 ** (failures - 1), self._cap)
        self._failing[item] = (failures, self._now() + wait)
        return failures

    def succeeded(self, item: str) -> None:
        self._failing.pop(item, None)

    def forget_all_but(self, items: set[str]) -> None:
        """Drop the state of items no longer waiting (settled by other means)."""
        for item in set(self._failing) - items:
            del self._failing[item]
