"""The injectable clock (services ask it for the time so tests can move time by hand), and
moments as protobuf Timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol

from google.protobuf.timestamp_pb2 import Timestamp

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class ManualClock:
    """A clock that moves only when told to: timers become testable without sleeping."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)
        if self._now.tzinfo is None:
            raise ValueError("ManualClock needs a timezone-aware start time")

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta) -> None:
        if delta < timedelta(0):
            raise ValueError("time does not run backwards")
        self._now += delta

    def set(self, moment: datetime) -> None:
        if moment < self._now:
            raise ValueError("time does not run backwards")
        self._now = moment


def protobuf_timestamp(moment: datetime) -> Timestamp:
    """``moment`` as a protobuf Timestamp (a naive one taken as UTC), in integer arithmetic.

    The same value as ``Timestamp.FromDatetime``, whose pure-Python time-tuple conversion
    was a sixtieth of geo's CPU per call and a hundredth of the wallet's settling process's.
    """
    since = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) - _EPOCH
    return Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1000)
