"""Geo's events carry the moment of the decision exactly as protobuf's own conversion does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from services.geo.events import location_events, timestamp
from tavla.geo.v1 import geo_pb2

MOMENTS = [
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(2026, 12, 5, 23, 59, 59, 999_999, tzinfo=UTC),
    datetime(2027, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
    datetime(2024, 2, 29, 12, 30, 0, 500_000, tzinfo=timezone(timedelta(hours=-5))),
    datetime(1969, 12, 31, 23, 59, 59, 250_000, tzinfo=UTC),  # before the epoch
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_a_moment_becomes_the_timestamp_protobuf_makes_of_it(moment: datetime) -> None:
    expected = Timestamp()
    expected.FromDatetime(moment)
    assert timestamp(moment) == expected


def test_both_events_of_a_block_carry_the_moment() -> None:
    moment = datetime(2026, 12, 5, 23, 1, 2, 345_678, tzinfo=UTC)
    decision = geo_pb2.LocationDecision(check_id="c-1", decision=geo_pb2.DECISION_BLOCK)
    request = geo_pb2.CheckLocationRequest(purpose=geo_pb2.PURPOSE_DEPOSIT, account_id="a-1")
    checked, blocked = location_events(decision, request, moment)
    for event in (checked, blocked):
        assert event.occurred_at.ToDatetime(tzinfo=UTC) == moment
