"""The geo service's events on ``tavla.geo.v1``: every decision, and every block again.

Keyed by account id, or by the address when there is no account yet (a check
before registration). Written through the outbox in the transaction that records
the decision, so a decision the service answered is a decision on record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from google.protobuf.message import Message

from services.kit.db import UnitOfWork
from tavla.geo.v1 import events_pb2, geo_pb2

TOPIC = "tavla.geo.v1"


def location_events(
    decision: geo_pb2.LocationDecision, request: geo_pb2.CheckLocationRequest, now: datetime
) -> list[Message]:
    """``LocationChecked``, and ``LocationBlocked`` too when the decision is a block."""
    checked = events_pb2.LocationChecked(
        check_id=decision.check_id,
        account_id=request.account_id,
        ip_address=decision.evidence.ip_address,
        purpose=request.purpose,
        decision=decision.decision,
        reasons=decision.reasons,
        country_code=decision.country_code,
        region_code=decision.region_code,
        rules_version=decision.rules_version,
        evidence=decision.evidence,
    )
    checked.occurred_at.FromDatetime(now)
    events: list[Message] = [checked]
    if decision.decision == geo_pb2.DECISION_BLOCK:
        blocked = events_pb2.LocationBlocked(
            check_id=checked.check_id,
            account_id=checked.account_id,
            ip_address=checked.ip_address,
            purpose=checked.purpose,
            reasons=checked.reasons,
            country_code=checked.country_code,
            region_code=checked.region_code,
            rules_version=checked.rules_version,
        )
        blocked.occurred_at.FromDatetime(now)
        events.append(blocked)
    return events


class DecisionLog:
    """Records decisions as events, through the outbox."""

    def __init__(self, unit_of_work: Callable[[], UnitOfWork]) -> None:
        self._unit_of_work = unit_of_work

    async def record(
        self, decision: geo_pb2.LocationDecision, request: geo_pb2.CheckLocationRequest
    ) -> None:
        key = request.account_id or decision.evidence.ip_address
        async with self._unit_of_work() as uow:
            events: Sequence[Message] = location_events(decision, request, uow.clock.now())
            for event in events:
                uow.publish(TOPIC, key, event)
            await uow.commit()
