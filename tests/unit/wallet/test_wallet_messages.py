"""The protobuf forms of the wallet's values: a moment as a Timestamp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from google.protobuf.timestamp_pb2 import Timestamp
from hypothesis import given
from hypothesis import strategies as st

from services.wallet.messages import timestamp

OFFSETS = st.integers(min_value=-23 * 60, max_value=23 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)


def _from_datetime(moment: datetime) -> tuple[int, int]:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp.seconds, stamp.nanos


@given(st.datetimes(timezones=st.one_of(st.just(UTC), OFFSETS)))
def test_a_moment_is_the_timestamp_protobuf_makes_of_it(moment: datetime) -> None:
    stamp = timestamp(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment)


@given(st.datetimes())
def test_a_moment_without_a_time_zone_is_taken_as_utc_as_protobuf_takes_it(
    moment: datetime,
) -> None:
    stamp = timestamp(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment)
    assert (stamp.seconds, stamp.nanos) == _from_datetime(moment.replace(tzinfo=UTC))
