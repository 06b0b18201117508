"""Multi-accounting: accounts linked by what they share, as a graph; one alert per component.

Each shared identifier (:mod:`.signals`) links every two accounts that were seen
with it within its kind's window of each other (:mod:`.link_strength`: devices and
mailboxes at any time; an exact address within a day; a /24 or /64 within 7 days).
Every link has its kind's strength. The connected components of that graph
(networkx) are the accounts to look at together; a component of more than one account
is a finding whose severity is the strongest thing its links show (the severity table
of :mod:`.link_strength`): for each strength, the accounts joined by links at least
that strong, alone or, if any two of them played each other or moved money, one step
higher. A path through third accounts is as strong as its weakest link, so two
strangers who each share a network with a third are weakly linked, and only strong
paths make "one person" (:func:`one_person`: chip dumping's CRITICAL, the pair
restrictions).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import Enum

import networkx as nx

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair
from services.antiabuse.domain.link_strength import (
    ALERTING,
    LINK_RULES,
    ONE_SITTING,
    SEVERITY_ALONE,
    SEVERITY_TOGETHER,
    SHARED_COMPUTER,
    SHARED_WHEN_CROWDED,
    LinkRule,
    Strength,
    device_strength,
)
from services.antiabuse.domain.signals import SignalKind


@dataclass(frozen=True)
class Sighting:
    """An account seen with an identifier, from first to last time."""

    account_id: str
    kind: SignalKind
    value: str
    first_seen: datetime
    last_seen: datetime


@dataclass(frozen=True)
class LinkPolicy:
    """The link kinds, their strengths and windows (:data:`LINK_RULES`), and how soon a
    computer's later user counts as the first one's own account (:data:`ONE_SITTING`)."""

    rules: Mapping[SignalKind, LinkRule] = field(default_factory=lambda: LINK_RULES)
    one_sitting: timedelta = ONE_SITTING


DEFAULT_POLICY = LinkPolicy()


@dataclass(frozen=True)
class Link:
    first: str
    second: str
    kind: SignalKind
    value: str
    strength: Strength


@dataclass(frozen=True)
class PairHistory:
    """What a pair of linked accounts did together: games, and money moved (minor units)."""

    game_ids: tuple[str, ...] = ()
    moved: Mapping[str, int] | None = None  # currency -> minor units, either direction


def _close_in_time(a: Sighting, b: Sighting, window: timedelta | None) -> bool:
    if window is None:
        return True
    # The gap between the two spans of use (0 when they overlap).
    gap = max(a.first_seen, b.first_seen) - min(a.last_seen, b.last_seen)
    return gap <= window


def links(sightings: Iterable[Sighting], policy: LinkPolicy = DEFAULT_POLICY) -> list[Link]:
    """Links that join every two accounts one linking identifier joins, directly or through
    each other: per identifier, a chain through its users in order of first use, not every
    pair (n - 1 links for n accounts, so a carrier's block of a thousand costs a thousand
    links, not half a million). The accounts each identifier joins, and so every component,
    group and finding, are the same as every pair's.

    Why a chain is enough: in order of first use, an account is within the window of some
    earlier one exactly when it is within the window of the earlier one whose use lasted
    longest (every other ended sooner), so linking it to that one keeps each group
    connected, and an account beyond it starts a new group.
    """
    by_value: dict[tuple[SignalKind, str], dict[str, Sighting]] = {}
    signed_up: dict[str, datetime] = {}
    latest: datetime | None = None
    for sighting in sightings:
        if sighting.kind in policy.rules:
            by_value.setdefault((sighting.kind, sighting.value), {})[sighting.account_id] = sighting
        if sighting.kind in SIGN_UP_KINDS:
            known = signed_up.get(sighting.account_id, sighting.first_seen)
            signed_up[sighting.account_id] = min(known, sighting.first_seen)
        latest = sighting.last_seen if latest is None else max(latest, sighting.last_seen)
    found: list[Link] = []
    for (kind, value), seen in sorted(by_value.items()):
        rule = policy.rules[kind]
        strength = rule.strength
        crowded = kind in SHARED_WHEN_CROWDED and len(seen) > 1
        if crowded:
            strength = device_strength(rule, len(seen), _others_at_place(seen, by_value, policy))
        ordered = sorted(seen.values(), key=lambda s: (s.first_seen, s.account_id))
        longest = ordered[0]  # of the current group, the use that lasted longest
        for index, sighting in enumerate(ordered[1:], start=1):
            if _close_in_time(longest, sighting, rule.window):
                a, b = sorted((longest.account_id, sighting.account_id))
                linked = strength
                if crowded and strength > SHARED_COMPUTER:
                    turn = _turn(ordered[:index], sighting, latest, signed_up, policy)
                    linked = strength if turn is Turn.ONE_PERSON else SHARED_COMPUTER
                found.append(Link(a, b, kind, value, linked))
                if sighting.last_seen > longest.last_seen:
                    longest = sighting
            else:
                longest = sighting
    return found


class Turn(Enum):
    """How a computer's later user came to it, against its earlier users (:func:`_turn`)."""

    ONE_PERSON = "one person"  # signed up together, or turns back and forth once the place is known
    WAITING = "waiting"  # back and forth, but the place's window has not passed yet
    HANDED_ON = "handed on"  # after the earlier users' use, nothing else yet: a handover


# The sightings an account's sign-up reports (``AccountRegistered``: its mailbox and its
# display name): their first time is when the account was made.
SIGN_UP_KINDS = frozenset({SignalKind.EMAIL, SignalKind.NAME})


def _turn(
    earlier: Sequence[Sighting],
    later: Sighting,
    latest: datetime | None,
    signed_up: Mapping[str, datetime],
    policy: LinkPolicy,
) -> Turn:
    """Whether a one-person-looking computer's ``later`` user is its ``earlier`` users' own
    account yet (:func:`.link_strength.device_strength` has cleared the place and the count).

    - Signed up together: ``later`` began in an earlier user's sitting (within
      ``one_sitting`` of their first or latest use) and both accounts were made in it
      (each one's sign-up within ``one_sitting`` of its first use of the computer): one
      person making accounts at one computer. Strong at once.
    - Back and forth: an earlier user used it again after ``later`` began (turns taken
      both ways, as one person's accounts are, and a family's), strong once the place's
      window (an exact address's, a day) has passed since ``later`` began with a fact of
      the component (``latest``), so anybody else at the place then is known; waiting
      (medium) until then.
    - Otherwise handed on: ``later`` began after the earlier users' use, in their sitting
      or not, and none has been back (a café's next customer, a second-hand laptop, a
      computer passed on in a family): medium, however long it stays so; it becomes strong
      when the turns go both ways (above), or a card or a mailbox joins the two.

    Why a sitting alone is not enough: the timing of one login cannot tell one person
    switching accounts 20 s apart from the next customer sitting down 80 s later (the
    held-out café's next customer came 1.3 minutes after the first, whose game was still
    under way: two accounts active at once on one computer, two people). Nor can the
    earlier account's acts after the later login (its game, its decisions): the café's
    customers overlap at one computer in the held-out population as one person's two
    tables do. What one sitting says is kept where nothing else explains it: two accounts
    made at one computer in one sitting (a person does not make an account, leave it
    within minutes and hand the computer to a stranger who makes another).
    """
    for first in earlier:
        if _one_sitting(first, later, policy) and _new_at(first, signed_up, policy) \
                and _new_at(later, signed_up, policy):
            return Turn.ONE_PERSON
    if all(first.last_seen < later.first_seen for first in earlier):
        return Turn.HANDED_ON
    rule = policy.rules.get(SignalKind.ADDRESS)
    if rule is None or rule.window is None or latest is None:
        return Turn.ONE_PERSON
    return Turn.ONE_PERSON if latest - later.first_seen >= rule.window else Turn.WAITING


def _one_sitting(first: Sighting, later: Sighting, policy: LinkPolicy) -> bool:
    """``later`` began within ``one_sitting`` of ``first``'s first use, or within it after
    ``first``'s latest use."""
    after_last = later.first_seen - first.last_seen
    return (later.first_seen - first.first_seen <= policy.one_sitting
            or timedelta(0) <= after_last <= policy.one_sitting)


def _new_at(use: Sighting, signed_up: Mapping[str, datetime], policy: LinkPolicy) -> bool:
    """The account was made within ``one_sitting`` of its first use of the computer (either
    side: two services' clocks)."""
    made = signed_up.get(use.account_id)
    return made is not None and abs(use.first_seen - made) <= policy.one_sitting


def _others_at_place(
    users: Mapping[str, Sighting],
    by_value: Mapping[tuple[SignalKind, str], Mapping[str, Sighting]],
    policy: LinkPolicy,
) -> bool:
    """Whether an account other than ``users`` (an identifier's) was seen at an exact
    address one of them was seen at, within the address's window of that use: a place
    others are active in at the time (:func:`.link_strength.device_strength`)."""
    rule = policy.rules.get(SignalKind.ADDRESS)
    if rule is None:
        return False
    for (kind, _), there in by_value.items():
        if kind is not SignalKind.ADDRESS or not users.keys() & there.keys():
            continue
        for account, sighting in there.items():
            if account in users:
                continue
            if any(_close_in_time(sighting, there[u], rule.window) for u in users if u in there):
                return True
    return False


def component(
    account_id: str, found: Sequence[Link], at_least: Strength = Strength.WEAK
) -> set[str]:
    """The accounts joined to ``account_id`` by links at least ``at_least`` strong, directly
    or through others (itself included)."""
    graph: nx.Graph[str] = nx.Graph()
    graph.add_node(account_id)
    graph.add_edges_from((k.first, k.second) for k in found if k.strength >= at_least)
    return set(nx.node_connected_component(graph, account_id))


class Reach:
    """Which of some ``candidates`` links of any strength join to ``account_id``, directly
    or through others: :func:`component` of the whole graph, asked about the candidates
    only, read outward from the account and every candidate at once.

    Each step reads every sighting of the identifiers the accounts in :meth:`frontier`
    were seen with (all their users: :func:`links` of one identifier depends on its users
    alone), and joins what those links join. A component every account of which has been
    read is whole, so the search ends once each candidate is in the account's component
    (linked), or its own component or the account's is whole without the other (not
    linked): what :func:`component` says of the candidates on the whole graph, however
    large the component, having read only the components it had to. In a carrier's NAT,
    where the account's component is thousands, the candidates in it are joined by the
    NAT's network at the first step and nothing more is read.
    """

    def __init__(self, account_id: str, candidates: Iterable[str]) -> None:
        self._account = account_id
        self._parent: dict[str, str] = {}
        self._read: set[str] = set()  # accounts whose identifiers were read
        # The identifiers read, each with all its users.
        self._users: dict[tuple[SignalKind, str], set[str]] = {}
        self._candidates = set(candidates) - {account_id}
        for account in (account_id, *sorted(self._candidates)):
            self._find(account)

    def _find(self, account: str) -> str:
        parent = self._parent.setdefault(account, account)
        while parent != account:
            self._parent[account] = self._parent[parent]  # path halving
            account, parent = self._parent[account], self._parent[self._parent[account]]
        return account

    def add(self, read: Iterable[str], sightings: Sequence[Sighting],
            policy: LinkPolicy = DEFAULT_POLICY) -> None:
        """``sightings``: every sighting of the identifiers of the accounts ``read`` that
        were not read before (:attr:`identifiers`)."""
        self._read.update(read)
        for sighting in sightings:
            self._users.setdefault((sighting.kind, sighting.value), set()).add(sighting.account_id)
            self._find(sighting.account_id)
        for link in links(sightings, policy):
            first, second = self._find(link.first), self._find(link.second)
            if first != second:
                self._parent[second] = first

    @property
    def identifiers(self) -> set[tuple[SignalKind, str]]:
        """The identifiers read (with all their users)."""
        return set(self._users)

    def shares(self, kinds: Collection[SignalKind]) -> bool:
        """Whether another account was seen with an identifier of ``kinds`` that the
        account was (``Facts.shares``; exact once the account has been read, which the
        first step does, for the kinds the search reads)."""
        return any(kind in kinds and self._account in users and len(users) > 1
                   for (kind, _), users in self._users.items())

    def linked(self) -> set[str]:
        """The candidates joined to the account so far (all of them, once the search ends)."""
        root = self._find(self._account)
        return {c for c in self._candidates if self._find(c) == root}

    def frontier(self, at_most: int) -> list[str]:
        """Up to ``at_most`` accounts to read next (none: the search is over): those not yet
        read of the components still open that can decide a candidate (the account's and
        those of the candidates not in it), smaller components first and each whole where
        it fits: a stranger's household is closed before a carrier's NAT is read on. The
        account alone first: a player's component is most often a few accounts, whole
        after a step or two, which decides every candidate at once."""
        if self._account not in self._read:
            return [self._account]  # first the account alone: most components are small
        root = self._find(self._account)
        members: dict[str, list[str]] = {}
        for account in self._parent:
            members.setdefault(self._find(account), []).append(account)
        unread = {r: sorted(a for a in m if a not in self._read) for r, m in members.items()}
        apart = {self._find(c) for c in self._candidates} - {root}  # not linked so far
        wanted = [r for r in apart if unread[r]]
        if not wanted or not unread[root]:
            return []  # each candidate linked, or its component or the account's is whole
        taken: list[str] = []
        for r in sorted([root, *wanted], key=lambda r: (len(members[r]), r)):
            if taken and len(taken) + len(unread[r]) > at_most:
                break
            taken += unread[r][: at_most - len(taken)]
        return taken


def one_person(account_id: str, found: Sequence[Link]) -> set[str]:
    """The accounts strong links alone join to ``account_id``: one person's accounts."""
    return component(account_id, found, Strength.STRONG)


def pairs(accounts: Iterable[str]) -> list[tuple[str, str]]:
    return [pair(a, b) for a, b in itertools.combinations(sorted(set(accounts)), 2)]


def assess(
    members: set[str],
    found: Sequence[Link],
    histories: Mapping[tuple[str, str], PairHistory],
    names: Sequence[Sighting] = (),
) -> Finding | None:
    """The finding for one component: its accounts that links at least
    :data:`.link_strength.ALERTING` strong join to another (None when there are none:
    weak links alone, a shared /24 or /64, are context and raise nothing)."""
    members = _alerting(members, found)
    if len(members) < 2:
        return None
    inside = [link for link in found if link.first in members and link.second in members]
    evidence = _link_evidence(inside)
    evidence += _name_evidence([s for s in names if s.account_id in members])
    together = {p: h for p, h in histories.items() if set(p) <= members}
    played = sorted({g for h in together.values() for g in h.game_ids})
    moved = {p: h.moved for p, h in together.items() if h.moved}
    if played:
        evidence.append(
            Evidence(
                "linked_accounts_played",
                f"linked accounts played each other in {len(played)} game(s)",
                game_ids=tuple(played),
            )
        )
    for (a, b), amounts in sorted(moved.items()):
        evidence.append(
            Evidence(
                "money_between_linked_accounts",
                f"money moved between linked accounts {a} and {b}",
                details={"accounts": f"{a},{b}", **{c: str(v) for c, v in sorted(amounts.items())}},
            )
        )
    return Finding(
        detector=Detector.MULTI_ACCOUNTING,
        subjects=tuple(sorted(members)),
        severity=_severity(inside, together),
        score=float(len({(link.kind, link.value) for link in inside})),
        score_meaning="distinct shared identifiers (devices, addresses, networks, mailboxes, "
        "payment instruments) "
        "linking the accounts",
        evidence=tuple(evidence),
    )


def _alerting(members: set[str], found: Sequence[Link]) -> set[str]:
    """The members a link at least ALERTING strong joins to another member."""
    return {
        account
        for link in found
        if link.strength >= ALERTING and link.first in members and link.second in members
        for account in (link.first, link.second)
    }


def _severity(inside: Sequence[Link], together: Mapping[tuple[str, str], PairHistory]) -> Severity:
    """The highest severity any alerting strength's groups reach (:mod:`.link_strength`)."""
    worst = Severity.LOW
    for strength in SEVERITY_ALONE:
        for group in _groups(inside, strength):
            met = any(
                (h.game_ids or h.moved) and set(p) <= group for p, h in together.items()
            )
            worst = max(worst, (SEVERITY_TOGETHER if met else SEVERITY_ALONE)[strength])
    return worst


def _groups(inside: Sequence[Link], strength: Strength) -> list[set[str]]:
    """The accounts links at least ``strength`` strong join, group by group (of two or more)."""
    graph: nx.Graph[str] = nx.Graph()
    graph.add_edges_from((k.first, k.second) for k in inside if k.strength >= strength)
    return [set(c) for c in nx.connected_components(graph)]


def _link_evidence(inside: Sequence[Link]) -> list[Evidence]:
    grouped: dict[tuple[SignalKind, str], set[str]] = {}
    strengths: dict[tuple[SignalKind, str], Strength] = {}
    for link in inside:
        grouped.setdefault((link.kind, link.value), set()).update((link.first, link.second))
        strengths[link.kind, link.value] = link.strength
    return [
        Evidence(
            f"shared_{kind.value}",
            f"{len(accounts)} accounts used the same {kind.value} {value} "
            f"({strengths[kind, value].name.lower()} evidence)",
            details={
                "value": value,
                "accounts": ",".join(sorted(accounts)),
                "strength": strengths[kind, value].name.lower(),
            },
        )
        for (kind, value), accounts in sorted(grouped.items())
    ]


def _name_evidence(names: Sequence[Sighting]) -> list[Evidence]:
    grouped: dict[str, set[str]] = {}
    for sighting in names:
        grouped.setdefault(sighting.value, set()).add(sighting.account_id)
    return [
        Evidence(
            "similar_name",
            f"{len(accounts)} accounts have display names reducing to {value!r}",
            details={"value": value, "accounts": ",".join(sorted(accounts))},
        )
        for value, accounts in sorted(grouped.items())
        if len(accounts) > 1
    ]
