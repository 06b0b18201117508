"""A computer's next user waits for the place's day (real PostgreSQL, broker and anti-abuse
service; ``LoggedIn`` as the accounts service publishes it, at the times it happened, each
stage consumed before the next is published):

- an internet café's first customers: a at computer 1, c at the same computer five hours
  later, nobody else at the address yet: no alert and no restriction (two accounts on one
  computer alone at their address look like one person's, but c did not begin in a's
  sitting, so the place's day is awaited); the next morning b sits at computer 2: a shared
  place; a's login a day later changes nothing;
- one person's second account on their own computer, five hours after the first, nobody
  else at the address: nothing at first; at the next login, more than a day after the
  second account began, a HIGH multi-accounting alert naming both and the pair restricted;
- two accounts begun on one computer in one sitting (minutes apart): alerted at once.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, wait_for_alert
from tests.support.kafka import publish
from tests.support.matchmaking import scalar
from tests.support.services import RunningService

MULTI = antiabuse_events.ALERT_KIND_MULTI_ACCOUNTING


def login(account: str, device: str, address: str, at: datetime) -> Envelope:
    fact = accounts.LoggedIn(
        account_id=account, device_id=device, ip_address=address,
        session_id=str(uuid.uuid4()), country="MT",
    )  # fmt: skip
    fact.occurred_at.FromDatetime(at)
    return support.envelope("tavla.accounts.v1", account, fact, "accounts")


async def restrictions(antiabuse: RunningService, ids: list[str]) -> object:
    return await scalar(
        antiabuse.settings.database_url,
        "SELECT count(*) FROM pair_restrictions"
        " WHERE low_account_id = ANY(:ids) OR high_account_id = ANY(:ids)",
        ids=ids,
    )


async def stage(bootstrap: str, events: list[Envelope]) -> None:
    await publish(bootstrap, events)
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])


async def test_a_computers_next_user_waits_for_the_places_day(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    now = datetime.now(UTC)
    a, b, c = (str(uuid.uuid4()) for _ in range(3))
    x, y = str(uuid.uuid4()), str(uuid.uuid4())
    cafe, home = f"{support.fresh_network()}.50", f"{support.fresh_network()}.7"
    pc_1, pc_2, own = (f"pc-{uuid.uuid4().hex[:8]}" for _ in range(3))
    first_day = now - timedelta(hours=50)
    await stage(bootstrap, [
        login(a, pc_1, cafe, first_day), login(x, own, home, first_day),
    ])  # fmt: skip
    await stage(bootstrap, [
        login(c, pc_1, cafe, first_day + timedelta(hours=5)),
        login(y, own, home, first_day + timedelta(hours=5)),
    ])  # fmt: skip
    # Five hours apart on one computer, nobody else at either address: not one sitting,
    # the place's day not over (the newest fact is the second login itself): nothing yet.
    for account in (a, c, x, y):
        assert await alerts_about(stub, account) == []
    assert await restrictions(antiabuse, [a, c, x, y]) == 0

    # The next morning (hour 20) b sits at the café's computer 2: a shared place.
    await stage(bootstrap, [login(b, pc_2, cafe, first_day + timedelta(hours=20))])
    # A day and more after c and y began (hour 5 + 24 <= hour 50): a and y sign in again.
    await stage(bootstrap, [login(a, pc_1, cafe, now), login(y, own, home, now)])

    alert = await wait_for_alert(stub, x, [x, y], antiabuse_events.SEVERITY_HIGH)
    assert alert.kind == MULTI
    strengths = {e.kind: e.details["strength"] for e in alert.evidence if "strength" in e.details}
    assert strengths["shared_device"] == "strong"
    assert await restrictions(antiabuse, [x, y]) == 1
    for account in (a, b, c):  # the café's customers: alerted for nothing, not restricted
        assert await alerts_about(stub, account) == []
    assert await restrictions(antiabuse, [a, b, c]) == 0


async def test_two_accounts_begun_in_one_sitting_are_alerted_at_once(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    p, q = str(uuid.uuid4()), str(uuid.uuid4())
    device, address = f"pc-{uuid.uuid4().hex[:8]}", f"{support.fresh_network()}.9"
    began = datetime.now(UTC) - timedelta(minutes=30)
    await publish(kafka_broker.bootstrap, [
        login(p, device, address, began), login(q, device, address, began + timedelta(minutes=20)),
    ])  # fmt: skip
    alert = await wait_for_alert(stub, p, [p, q], antiabuse_events.SEVERITY_HIGH)
    assert alert.kind == MULTI
    assert await restrictions(antiabuse, [p, q]) == 1
