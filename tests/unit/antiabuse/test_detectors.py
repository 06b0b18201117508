"""The pure detectors: linking accounts, their components and findings; one-way money flows.

Expected values are worked out by hand from the scenarios, not by the code.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.antiabuse.domain import chip_dumping, multi_accounting
from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.multi_accounting import PairHistory, Sighting
from services.antiabuse.domain.signals import (
    SignalKind,
    address_signals,
    email_signal,
    name_signal,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def seen(account: str, kind: SignalKind, value: str, days: float = 0, until: float = 0) -> Sighting:
    return Sighting(
        account, kind, value, T0 + timedelta(days=days), T0 + timedelta(days=until or days)
    )


def test_addresses_give_the_exact_address_and_its_24_or_64() -> None:
    assert [s.value for s in address_signals("203.0.113.77")] == ["203.0.113.77", "203.0.113.0/24"]
    assert [s.value for s in address_signals("2001:db8:1:2:a::1")] == [
        "2001:db8:1:2:a::1",
        "2001:db8:1:2::/64",
    ]
    assert [s.value for s in address_signals("::ffff:198.51.100.9")][1] == "198.51.100.0/24"
    assert address_signals("not an address") == []
    for nowhere in ("127.0.0.1", "::1", "0.0.0.0", "169.254.1.1", "fe80::1", "224.0.0.1"):
        assert address_signals(nowhere) == [], nowhere


def test_mailboxes_and_names_are_normalised() -> None:
    assert email_signal("J.Doe+poker@GoogleMail.com") == email_signal("jdoe@gmail.com")
    assert email_signal("j.doe@example.com") != email_signal("jdoe@example.com")
    assert email_signal("no-at-sign") is None
    assert name_signal("Zoë_99") == name_signal("zoe")
    assert name_signal("x1") is None


def test_a_ring_sharing_a_device_and_a_network_is_one_component() -> None:
    sightings = [
        # a back at the computer after b began there (turns both ways), days ago.
        seen("a", SignalKind.DEVICE, "dev-1", until=4),
        seen("b", SignalKind.DEVICE, "dev-1", days=3),
        seen("b", SignalKind.NETWORK, "198.51.100.0/24", days=3),
        seen("c", SignalKind.NETWORK, "198.51.100.0/24", days=5),
        seen("d", SignalKind.DEVICE, "dev-2"),
    ]
    links = multi_accounting.links(sightings)
    assert multi_accounting.component("a", links) == {"a", "b", "c"}
    assert multi_accounting.component("d", links) == {"d"}
    finding = multi_accounting.assess({"a", "b", "c"}, links, {})
    assert finding is not None
    # c, joined by the /24 alone, is context, not a subject: a network joins strangers.
    assert finding.subjects == ("a", "b")
    assert finding.severity is Severity.HIGH  # a device is a strong link
    assert finding.score == 1.0  # one device between a and b
    assert {e.kind for e in finding.evidence} == {"shared_device"}
    assert multi_accounting.pairs({"c", "a", "b"}) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_a_network_shared_long_apart_links_nobody_and_names_never_link() -> None:
    sightings = [
        seen("a", SignalKind.NETWORK, "198.51.100.0/24", days=0, until=1),
        seen("b", SignalKind.NETWORK, "198.51.100.0/24", days=9),  # 8 days after a left
        seen("a", SignalKind.NAME, "ann"),
        seen("b", SignalKind.NAME, "ann"),
    ]
    assert multi_accounting.links(sightings) == []
    # Within the 7 days, the same network links them, weakly: context, no alert of its own,
    # even with a similar name.
    close = [*sightings[:1], seen("b", SignalKind.NETWORK, "198.51.100.0/24", days=7.9)]
    links = multi_accounting.links(close)
    assert multi_accounting.component("a", links) == {"a", "b"}
    assert multi_accounting.assess({"a", "b"}, links, {}, sightings[2:]) is None


def test_linked_accounts_that_played_or_moved_money_are_critical() -> None:
    links = multi_accounting.links(
        [seen("a", SignalKind.EMAIL, "x@example.com"), seen("b", SignalKind.EMAIL, "x@example.com")]
    )
    played = multi_accounting.assess({"a", "b"}, links, {("a", "b"): PairHistory(("g1",))})
    assert played is not None and played.severity is Severity.CRITICAL
    assert played.evidence[-1].game_ids == ("g1",)
    paid = multi_accounting.assess({"a", "b"}, links, {("a", "b"): PairHistory((), {"USD": 500})})
    assert paid is not None and paid.severity is Severity.CRITICAL
    # A different fingerprint from the HIGH finding: escalation is a new alert.
    plain = multi_accounting.assess({"a", "b"}, links, {})
    assert plain is not None and plain.fingerprint != paid.fingerprint
    assert multi_accounting.assess({"a"}, links, {}) is None


def transfer(
    n: int, loser: str, winner: str, amount: int, currency: str = "USD", days_ago: float = 0
) -> chip_dumping.Transfer:
    return chip_dumping.Transfer(
        f"s{n}", f"g{n}", loser, winner, amount, currency, T0 - timedelta(days=days_ago)
    )


def test_money_flowing_one_way_over_several_games_is_dumping() -> None:
    # b loses 1000 to a in ten games, wins nothing back: 10000 net, share 1.0, and
    # fair play between equals loses all ten with probability 1/1024 (<= 0.001).
    flows = [transfer(i, "b", "a", 1000) for i in range(10)]
    finding = chip_dumping.assess(flows, T0)
    assert finding is not None
    assert finding.subjects == ("a", "b")
    assert finding.severity is Severity.MEDIUM  # the flow alone: a skill gap looks the same
    assert finding.score == 1.0
    details = finding.evidence[0].details
    assert (details["giver"], details["receiver"], details["net_minor"]) == ("b", "a", "10000")
    assert finding.evidence[0].game_ids == tuple(f"g{i}" for i in range(10))
    # Eight such games (1/256 by chance) are not enough alone; the same accounts as one
    # person (strong links): CRITICAL from four.
    eight = [transfer(i, "b", "a", 1000) for i in range(8)]
    assert chip_dumping.assess(eight, T0) is None
    linked = chip_dumping.assess(flows[:4], T0, linked=True)
    assert linked is not None and linked.severity is Severity.CRITICAL


def test_honest_alternating_results_play_money_and_old_games_are_not_dumping() -> None:
    alternating = [transfer(i, *(("a", "b") if i % 2 else ("b", "a")), 1000) for i in range(10)]
    assert chip_dumping.assess(alternating, T0) is None
    # 4 losses of 1000 against one win of 1000 back: share 4000/5000 = 0.8 < 0.9.
    mostly = [transfer(i, "b", "a", 1000) for i in range(4)] + [transfer(9, "a", "b", 1000)]
    assert chip_dumping.assess(mostly, T0) is None
    assert chip_dumping.assess([transfer(i, "b", "a", 1000, "PLAY") for i in range(9)], T0) is None
    old = [transfer(i, "b", "a", 1000, days_ago=31) for i in range(9)]
    assert chip_dumping.assess(old, T0) is None
    # Three games are too few; four games of 400 (1600 net) too little money.
    assert chip_dumping.assess([transfer(i, "b", "a", 5000) for i in range(3)], T0) is None
    assert chip_dumping.assess([transfer(i, "b", "a", 400) for i in range(4)], T0) is None
