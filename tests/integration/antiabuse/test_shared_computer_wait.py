"""A computer's next user waits for the place's day (real PostgreSQL, broker and anti-abuse
service; ``LoggedIn`` as the accounts service publishes it, at the times it happened, each
stage consumed before the next is published):

- an internet café's first customers: a at computer 1, c at the same computer five hours
  later, nobody else at the address yet: no alert and no restriction (two accounts on one
  computer alone at their address look like one person's, but c did not begin in a's
  sitting, so the place's day is awaited); the next morning b sits at computer 2: a shared
  place; a's login a day later changes nothing;
- one person's second account on their own computer, five hours after the first, nobody
  else at the address: nothing at first; when the first account is back at the computer
  more than a day after the second began (turns both ways), a HIGH multi-accounting alert
  naming both and the pair restricted;
- two accounts made and begun on one computer in one sitting (signed up a minute apart):
  alerted at once; when a third customer then sits at the place's other computer, the
  restriction is lifted and the alert downgraded, on its history and in its case's log;
  two older accounts begun 1.3 minutes apart (the café's next customer, or one person
  switching accounts: the timing cannot tell), and two begun 18 minutes apart (a café's
  first customer's visit, then the next one's), with nobody else there: nothing, since a
  computer handed on is two people as often as one.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import Message

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
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


def signup(account: str, at: datetime) -> Envelope:
    fact = accounts.AccountRegistered(
        account_id=account, email=f"{account}@example.com", display_name="cafe",
        residence="MT", country_code="MT",
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
    # A day and more after c and y began (hour 5 + 24 <= hour 50): a and x are back at
    # their computers.
    await stage(bootstrap, [login(a, pc_1, cafe, now), login(x, own, home, now)])

    alert = await wait_for_alert(stub, x, [x, y], antiabuse_events.SEVERITY_HIGH)
    assert alert.kind == MULTI
    strengths = {e.kind: e.details["strength"] for e in alert.evidence if "strength" in e.details}
    assert strengths["shared_device"] == "strong"
    assert await restrictions(antiabuse, [x, y]) == 1
    for account in (a, b, c):  # the café's customers: alerted for nothing, not restricted
        assert await alerts_about(stub, account) == []
    assert await restrictions(antiabuse, [a, b, c]) == 0


async def test_two_accounts_made_in_one_sitting_are_alerted_at_once_a_sitting_alone_is_not(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    p, q = str(uuid.uuid4()), str(uuid.uuid4())
    device, address = f"pc-{uuid.uuid4().hex[:8]}", f"{support.fresh_network()}.9"
    began = datetime.now(UTC) - timedelta(minutes=30)
    # The café's opening: its first customer, then the next 18 minutes later, nobody else.
    r, s = str(uuid.uuid4()), str(uuid.uuid4())
    pc, cafe = f"pc-{uuid.uuid4().hex[:8]}", f"{support.fresh_network()}.50"
    # Another café's opening: two accounts made weeks before, 1.3 minutes apart at one
    # computer, nobody else there.
    t, u = str(uuid.uuid4()), str(uuid.uuid4())
    pc_t, cafe_t = f"pc-{uuid.uuid4().hex[:8]}", f"{support.fresh_network()}.51"
    weeks = began - timedelta(days=20)
    await stage(kafka_broker.bootstrap, [
        signup(t, weeks), signup(u, weeks + timedelta(days=2)),
        login(r, pc, cafe, began), login(s, pc, cafe, began + timedelta(minutes=18)),
        signup(p, began - timedelta(seconds=20)), login(p, device, address, began),
        signup(q, began + timedelta(seconds=40)),
        login(q, device, address, began + timedelta(minutes=1)),
        login(t, pc_t, cafe_t, began), login(u, pc_t, cafe_t, began + timedelta(minutes=1.3)),
    ])  # fmt: skip
    alert = await wait_for_alert(stub, p, [p, q], antiabuse_events.SEVERITY_HIGH)
    assert alert.kind == MULTI
    assert await restrictions(antiabuse, [p, q]) == 1
    for account in (r, s, t, u):
        assert await alerts_about(stub, account) == []
    assert await restrictions(antiabuse, [r, s, t, u]) == 0


async def test_a_restriction_is_lifted_when_the_computer_turns_out_shared(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    # A café's opening: its first two customers at computer 1 a minute apart, each signing
    # up there, nobody else there yet: one person to the detector (HIGH, restricted), and an
    # officer opens a case.
    # Twenty minutes on a third customer sits at computer 2: the computer is a shared one.
    # The restriction is lifted (PairRestrictionLifted), the alert is downgraded to MEDIUM
    # with the step in its history, and the case's log says so.
    bootstrap = kafka_broker.bootstrap
    d, e, f = (str(uuid.uuid4()) for _ in range(3))
    pc_1, pc_2 = (f"pc-{uuid.uuid4().hex[:8]}" for _ in range(2))
    cafe = f"{support.fresh_network()}.60"
    opened = datetime.now(UTC) - timedelta(minutes=30)
    await stage(bootstrap, [signup(d, opened), login(d, pc_1, cafe, opened),
                            signup(e, opened + timedelta(minutes=1)),
                            login(e, pc_1, cafe, opened + timedelta(minutes=1))])
    alert = await wait_for_alert(stub, d, [d, e], antiabuse_events.SEVERITY_HIGH)
    assert await restrictions(antiabuse, [d, e]) == 1
    case = await stub.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                               metadata=support.officer())

    await stage(bootstrap, [login(f, pc_2, cafe, opened + timedelta(minutes=20))])
    async with asyncio.timeout(90):
        while (now := await get_alert(stub, alert.alert_id)).severity != (
            antiabuse_events.SEVERITY_MEDIUM
        ):
            await asyncio.sleep(0.3)
    assert [h.action for h in now.history] == ["raised", "downgraded"]
    assert "pair restriction lifted" in now.history[-1].detail
    assert now.status == antiabuse_events.ALERT_STATUS_OPEN  # an officer still looks
    standing = await scalar(
        antiabuse.settings.database_url,
        "SELECT count(*) FROM pair_restrictions WHERE low_account_id = ANY(:ids)"
        " AND lifted_at IS NULL", ids=[d, e])
    assert standing == 0
    def lift_of_pair(ce_type: str, value: bytes) -> Message | None:
        if ce_type != antiabuse_events.PairRestrictionLifted.DESCRIPTOR.full_name:
            return None
        verdict = antiabuse_events.PairRestrictionLifted.FromString(value)
        return verdict if {verdict.account_id, verdict.other_account_id} == {d, e} else None

    [lifted] = await support.read_topic(bootstrap, "tavla.antiabuse.v1", lift_of_pair,
                                        lambda found: len(found) >= 1)
    assert "no longer one person's accounts" in lifted.detail  # type: ignore[attr-defined]
    log = await stub.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case.case_id),
                             metadata=support.officer())
    assert [(line.actor, line.action) for line in log.log][-1] == (
        "multi_accounting", "downgraded")
    # A later login of theirs changes nothing more: lifted once.
    await stage(bootstrap, [login(d, pc_1, cafe, opened + timedelta(minutes=25))])
    assert [h.action for h in (await get_alert(stub, alert.alert_id)).history] == [
        "raised", "downgraded"]


async def get_alert(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, alert_id: str
) -> antiabuse_events.ComplianceAlert:
    return await stub.GetAlert(antiabuse_pb2.GetAlertRequest(alert_id=alert_id),
                               metadata=support.officer())
