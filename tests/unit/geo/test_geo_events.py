"""Geo's events carry the moment of the decision."""

from __future__ import annotations

from datetime import UTC, datetime

from services.geo.events import location_events
from tavla.geo.v1 import geo_pb2


def test_both_events_of_a_block_carry_the_moment() -> None:
    moment = datetime(2026, 12, 5, 23, 1, 2, 345_678, tzinfo=UTC)
    decision = geo_pb2.LocationDecision(check_id="c-1", decision=geo_pb2.DECISION_BLOCK)
    request = geo_pb2.CheckLocationRequest(purpose=geo_pb2.PURPOSE_DEPOSIT, account_id="a-1")
    checked, blocked = location_events(decision, request, moment)
    for event in (checked, blocked):
        assert event.occurred_at.ToDatetime(tzinfo=UTC) == moment
