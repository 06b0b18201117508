"""A moment as a protobuf Timestamp: the value protobuf's own conversion makes of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from services.kit.clock import protobuf_timestamp

OFFSETS = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


def _from_datetime(moment: datetime) -> tuple[int, int]:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp.seconds, stamp.nanos


@given(st.datetimes(timezones=st.one_of(st.just(UTC), OFFSETS)))
def test_a_moment_is_the_timestamp_protobuf_makes_of_it(moment: datetime) -> None:
    stamp = protobuf_timestamp(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment)


@given(st.datetimes())
def test_a_moment_without_a_time_zone_is_taken_as_utc_as_protobuf_takes_it(
    moment: datetime,
) -> None:
    stamp = protobuf_timestamp(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment.replace(tzinfo=UTC))


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2026, 12, 5, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2024, 2, 29, 12, 30, 0, 500_000, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1969, 12, 31, 23, 59, 59, 250_000, tzinfo=UTC),  # before the epoch
    ],
)
def test_edge_moments_are_the_timestamps_protobuf_makes_of_them(moment: datetime) -> None:
    stamp = protobuf_timestamp(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment)
