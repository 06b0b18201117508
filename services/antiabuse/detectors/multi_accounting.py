"""Multi-accounting, run after any fact that can link accounts or show them together.

Raises the finding (:mod:`services.antiabuse.domain.multi_accounting`) for one
person's accounts: those a path of strong links (:mod:`services.antiabuse.domain.link_strength`:
a device, a mailbox, a payment instrument) joins, and publishes ``PairRestricted``
(reason LINKED_ACCOUNTS) on ``tavla.antiabuse.v1``, keyed by the sorted pair, for
every pair of them not yet restricted, so matchmaking never seats them together.

A shared exact address or network (a household, an office, a campus, a carrier's NAT)
raises no alert by itself, played-together or not: it is context (the alert's evidence
when a strong link raises one, the risk profile's linked accounts, consulting's
candidates). Why: the held-out evaluation (``evaluation/heldout.py``) puts 30 strangers
behind one carrier address and 16 in one /24, as real carriers and campuses do; an
alert for each such component named every one of them (119 of its 540 honest accounts
share an address or a network with another account), and strangers on one address who
happen to meet at a table are common, not a sign. The cost: a person whose accounts
share only an address (own devices, mailboxes and cards) is not flagged by this detector.

A device is one person's only while it looks like one person's computer: a computer more
than 3 accounts use, or one at an address where other accounts were active at the time
(an internet café, an office), is a shared computer and links at medium
(:func:`services.antiabuse.domain.link_strength.device_strength` says why): the held-out
evaluation's café (24 players on 4 computers at one address) was alerted and restricted as
one person before. A computer's later user links strongly only when both accounts were made
at it in one sitting (signed up there within 2 minutes, the later in the earlier's sitting),
or when the turns went both ways and the place's day has passed; one who began after the
earlier users' use, however soon, and nothing more (a computer handed on: a café's next
customer, a second-hand laptop) links at medium (``domain.multi_accounting._turn``; the
component is examined again at its next login, game or settlement). A shared card or
mailbox stays strong. A pair restricted as one person and no longer so (the café's later
customers arrived) has its restriction lifted, and its alert downgraded, on the alert's
history and its case's log (:meth:`MultiAccounting._revisit`).

The component is walked through exact addresses and stronger links
(:data:`services.antiabuse.domain.link_strength.ALERTING`), so a carrier's block or an
office's /64 is not read on every login and game there; and every account of it is
locked before it is read for the last time (:meth:`MultiAccounting.locked_component`),
so two events of one component, on any replica, see each other's facts.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection

from google.protobuf.message import Message

from services.antiabuse.alerting import VERDICTS_TOPIC, Work, lifted_on_alert, raise_alert
from services.antiabuse.domain import multi_accounting as domain
from services.antiabuse.domain.link_strength import ALERTING, LINKING, Strength
from services.antiabuse.domain.multi_accounting import Sighting
from services.antiabuse.domain.signals import SignalKind
from services.antiabuse.store import MAX_COMPONENT, Facts
from tavla.antiabuse.v1 import events_pb2

REASON = events_pb2.PAIR_RESTRICTION_REASON_LINKED_ACCOUNTS
# Consulting's search for the candidates linked to an account (:meth:`MultiAccounting.joined`):
# at most this many accounts' identifiers read (five times the bound of a component read
# whole), this many a statement. Beyond it a candidate not yet joined is taken as not linked.
MAX_REACHED = 5 * MAX_COMPONENT
REACH_STEP = 100
LIFTED = ("no longer one person's accounts: no path of strong links joins them now (a "
          "computer they share turned out to be a shared one: others at its place at the "
          "time, or more accounts than one person runs; or their turns at it read as a "
          "computer handed on)")


class MultiAccounting:
    def __init__(self, policy: domain.LinkPolicy = domain.DEFAULT_POLICY) -> None:
        self._policy = policy
        self.walked = self._kinds(ALERTING)  # the kinds a component is walked through
        self._linking = frozenset(self._policy.rules) & LINKING  # what :meth:`linked` walks
        self._strong = self._kinds(Strength.STRONG)

    def _kinds(self, at_least: Strength) -> frozenset[SignalKind]:
        return frozenset(k for k, rule in self._policy.rules.items() if rule.strength >= at_least)

    async def linked(self, facts: Facts, account_id: str) -> set[str]:
        """The accounts linked to ``account_id`` by anything, weak links too (itself
        included): context for a person, never grounds for an automatic act."""
        sightings = await facts.neighbourhood(account_id)
        return domain.component(account_id, domain.links(sightings, self._policy))

    async def one_person(self, facts: Facts, account_id: str) -> set[str]:
        """The accounts strong links join to ``account_id`` (itself included). Read through
        exact addresses too, as :meth:`examine` does: whether a device is one person's
        depends on who else was at its place (:func:`.link_strength.device_strength`)."""
        sightings = await facts.neighbourhood(account_id, self.walked)
        return domain.one_person(account_id, domain.links(sightings, self._policy))

    async def joined(
        self, facts: Facts, account_id: str, candidates: Collection[str]
    ) -> tuple[set[str], set[str]]:
        """Those of ``candidates`` that :meth:`linked` holds for ``account_id``, and those
        :meth:`one_person` holds, without reading the whole component: the weak links by a
        search from the account and the candidates at once (:class:`domain.Reach`, at most
        ``MAX_REACHED`` accounts read, ``REACH_STEP`` a statement), exact on the whole
        graph where :meth:`linked` is exact only up to ``MAX_COMPONENT`` accounts; one
        person's accounts by :meth:`one_person` itself, asked only when a candidate is
        linked and the account shares a device, a mailbox or a card with anybody (no strong
        link without one; the search's first step has read who else uses each)."""
        wanted = set(candidates) - {account_id}
        if not wanted:
            return set(), set()
        reach = domain.Reach(account_id, wanted)
        budget = MAX_REACHED
        while budget > 0 and (step := reach.frontier(min(REACH_STEP, budget))):
            budget -= len(step)
            reach.add(step, await facts.identified_with(step, self._linking, reach.identifiers),
                      self._policy)  # fmt: skip
        linked = reach.linked()
        if not linked or not reach.shares(self._strong):
            return linked, set()
        return linked, await self.one_person(facts, account_id) & linked

    async def locked_component(self, work: Work, account_id: str) -> list[Sighting]:
        """The sightings of the accounts alerting links reach from ``account_id``, read
        once all of them are locked (read again while a new account appears: one that
        joined after the first read)."""
        sightings = await work.facts.neighbourhood(account_id, self.walked)
        while not (accounts := {s.account_id for s in sightings}) <= work.locks.accounts:
            await work.locks.take(accounts)
            sightings = await work.facts.neighbourhood(account_id, self.walked)
        return sightings

    async def examine(self, work: Work, account_id: str) -> None:
        if not await work.facts.shares(account_id, self.walked):
            # No component: and any account about to share one of its identifiers holds
            # that identifier's lock until it commits, and then finds this one.
            return
        sightings = await self.locked_component(work, account_id)
        found = domain.links(sightings, self._policy)
        await self._revisit(work, {s.account_id for s in sightings}, found)
        members = domain.one_person(account_id, found)
        if len(members) < 2:
            return
        names = [s for s in sightings if s.kind is SignalKind.NAME]
        finding = domain.assess(members, found, await work.facts.histories(members), names)
        if finding is None:
            return
        alert_id, _ = await raise_alert(work, finding)
        await self._restrict_pairs(work, members, alert_id)

    async def _revisit(self, work: Work, accounts: set[str], found: list[domain.Link]) -> None:
        """Lift the standing restrictions between ``accounts`` that no path of strong links
        joins any more (the computer they share turned out to be a shared one: the café's
        later customers arrived, a fourth account used it), with the lift on the alert's
        history and in its case's log. Not when the component was cut at its bound: a path
        through an account not read may still join them."""
        if len(accounts) >= MAX_COMPONENT:
            return
        standing = await work.alerts.standing(accounts, REASON)
        gone = [r for r in standing if r.pair[1] not in domain.one_person(r.pair[0], found)]
        if not gone:
            return
        now = work.clock.now()
        lifted = set(await work.alerts.lift([r.restriction_id for r in gone], now, LIFTED))
        gone = [r for r in gone if r.restriction_id in lifted]
        verdicts: list[tuple[str, Message]] = []
        for restriction in gone:
            low, high = restriction.pair
            verdict = events_pb2.PairRestrictionLifted(
                restriction_id=restriction.restriction_id, account_id=low,
                other_account_id=high, detail=f"{LIFTED} (alert {restriction.alert_id})",
            )  # fmt: skip
            verdict.occurred_at.FromDatetime(now)
            verdicts.append((f"{low}:{high}", verdict))
        await work.publish_all(VERDICTS_TOPIC, verdicts)
        for alert_id in sorted({r.alert_id for r in gone}):
            pairs = ", ".join(f"{a} and {b}" for a, b in (r.pair for r in gone
                                                           if r.alert_id == alert_id))
            await lifted_on_alert(work, alert_id, f"pair restriction lifted ({pairs}): {LIFTED}",
                                  lambda a, b: b in domain.one_person(a, found))

    async def _restrict_pairs(self, work: Work, members: set[str], alert_id: str) -> None:
        now = work.clock.now()
        recorded = await work.alerts.restrict(
            pairs=domain.pairs(members),
            reason=REASON,
            alert_id=alert_id,
            at=now,
            new_id=lambda: str(uuid.uuid4()),
        )
        verdicts: list[tuple[str, Message]] = []
        for restriction_id, (low, high) in recorded:
            verdict = events_pb2.PairRestricted(
                restriction_id=restriction_id,
                account_id=low,
                other_account_id=high,
                reason=REASON,
                detail="linked accounts: shared devices, mailboxes or payment instruments "
                f"(alert {alert_id})",
                alert_id=alert_id,
            )
            verdict.occurred_at.FromDatetime(now)
            verdicts.append((f"{low}:{high}", verdict))
        await work.publish_all(VERDICTS_TOPIC, verdicts)
