"""Multi-accounting: accounts linked by what they share, as a graph; one alert per component.

Each shared identifier (:mod:`.signals`) links every two accounts that were
seen with it: devices and mailboxes at any time; an exact address, or a /24 or
/64, only when the two accounts used it within ``address_window`` or
``network_window`` of each other (addresses change hands; a network is shared
by neighbours, so only recent sharing counts). The connected components of that
graph (networkx) are the suspected people. A component of more than one account
is a finding: MEDIUM when only networks link it, HIGH when a device, an address
or a mailbox does, CRITICAL when accounts of it played each other or money moved
between them. Every pair of a component gets a pair verdict (PairRestricted).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import networkx as nx

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair
from services.antiabuse.domain.signals import LINKING, STRONG, SignalKind


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
    address_window: timedelta = timedelta(days=30)
    network_window: timedelta = timedelta(days=7)


DEFAULT_POLICY = LinkPolicy()


@dataclass(frozen=True)
class Link:
    first: str
    second: str
    kind: SignalKind
    value: str


@dataclass(frozen=True)
class PairHistory:
    """What a pair of linked accounts did together: games, and money moved (minor units)."""

    game_ids: tuple[str, ...] = ()
    moved: Mapping[str, int] | None = None  # currency -> minor units, either direction


def _window(kind: SignalKind, policy: LinkPolicy) -> timedelta | None:
    if kind is SignalKind.ADDRESS:
        return policy.address_window
    if kind is SignalKind.NETWORK:
        return policy.network_window
    return None


def _close_in_time(a: Sighting, b: Sighting, window: timedelta | None) -> bool:
    if window is None:
        return True
    # The gap between the two spans of use (0 when they overlap).
    gap = max(a.first_seen, b.first_seen) - min(a.last_seen, b.last_seen)
    return gap <= window


def links(sightings: Iterable[Sighting], policy: LinkPolicy = DEFAULT_POLICY) -> list[Link]:
    """Every pair of accounts one linking identifier joins."""
    by_value: dict[tuple[SignalKind, str], dict[str, Sighting]] = {}
    for sighting in sightings:
        if sighting.kind in LINKING:
            by_value.setdefault((sighting.kind, sighting.value), {})[sighting.account_id] = sighting
    found: list[Link] = []
    for (kind, value), seen in sorted(by_value.items()):
        window = _window(kind, policy)
        for a, b in itertools.combinations(sorted(seen), 2):
            if _close_in_time(seen[a], seen[b], window):
                found.append(Link(a, b, kind, value))
    return found


def component(account_id: str, found: Sequence[Link]) -> set[str]:
    """The accounts linked to ``account_id``, directly or through others (itself included)."""
    graph: nx.Graph[str] = nx.Graph()
    graph.add_node(account_id)
    graph.add_edges_from((link.first, link.second) for link in found)
    return set(nx.node_connected_component(graph, account_id))


def pairs(accounts: Iterable[str]) -> list[tuple[str, str]]:
    return [pair(a, b) for a, b in itertools.combinations(sorted(set(accounts)), 2)]


def assess(
    members: set[str],
    found: Sequence[Link],
    histories: Mapping[tuple[str, str], PairHistory],
    names: Sequence[Sighting] = (),
) -> Finding | None:
    """The finding for one component (None for a lone account)."""
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
    kinds = {link.kind for link in inside}
    if played or moved:
        severity = Severity.CRITICAL
    elif kinds & STRONG:
        severity = Severity.HIGH
    else:
        severity = Severity.MEDIUM
    return Finding(
        detector=Detector.MULTI_ACCOUNTING,
        subjects=tuple(sorted(members)),
        severity=severity,
        score=float(len({(link.kind, link.value) for link in inside})),
        score_meaning="distinct shared identifiers (devices, addresses, networks, mailboxes, "
        "payment instruments) "
        "linking the accounts",
        evidence=tuple(evidence),
    )


def _link_evidence(inside: Sequence[Link]) -> list[Evidence]:
    grouped: dict[tuple[SignalKind, str], set[str]] = {}
    for link in inside:
        grouped.setdefault((link.kind, link.value), set()).update((link.first, link.second))
    return [
        Evidence(
            f"shared_{kind.value}",
            f"{len(accounts)} accounts used the same {kind.value} {value}",
            details={"value": value, "accounts": ",".join(sorted(accounts))},
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
