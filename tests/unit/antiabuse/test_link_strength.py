"""Evidence strength per link kind, and the chip-dumping flow's chance under fair play.

Expected values are worked out by hand: severities from the strength table as the
service's README states it, binomial tails from the formula sum C(n, i) / 2^n.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from math import comb

import pytest

from services.antiabuse.domain import chip_dumping, multi_accounting
from services.antiabuse.domain.findings import Evidence, Severity
from services.antiabuse.domain.link_strength import LINK_RULES, LINKING, Strength
from services.antiabuse.domain.multi_accounting import PairHistory, Sighting
from services.antiabuse.domain.signals import SignalKind, address_signals

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def seen(account: str, kind: SignalKind, value: str, hours: float = 0) -> Sighting:
    at = T0 + timedelta(hours=hours)
    return Sighting(account, kind, value, at, at)


def nat(*accounts: str, hours: float = 0) -> list[Sighting]:
    """Accounts behind one public NAT address (and so its /24)."""
    return [
        s
        for a in accounts
        for s in (
            seen(a, SignalKind.ADDRESS, "198.51.100.7", hours),
            seen(a, SignalKind.NETWORK, "198.51.100.0/24", hours),
        )
    ]


def test_each_link_kind_has_its_strength_window_and_reason() -> None:
    strong = {SignalKind.DEVICE, SignalKind.EMAIL, SignalKind.PAYMENT}
    assert {k for k, r in LINK_RULES.items() if r.strength is Strength.STRONG} == strong
    assert all(LINK_RULES[k].window is None for k in strong)  # one person's, at any time
    assert LINK_RULES[SignalKind.ADDRESS].strength is Strength.MEDIUM
    assert LINK_RULES[SignalKind.ADDRESS].window == timedelta(hours=24)
    assert LINK_RULES[SignalKind.NETWORK].strength is Strength.WEAK
    assert LINK_RULES[SignalKind.NETWORK].window == timedelta(days=7)
    assert SignalKind.NAME not in LINKING  # a first name is evidence, never a link
    assert all(len(rule.reason) > 40 for rule in LINK_RULES.values())


@pytest.mark.parametrize(
    "address",
    [
        "10.1.2.3", "172.16.0.9", "172.31.255.1", "192.168.1.10",  # private
        "100.64.0.1", "100.127.255.254",  # carrier-grade NAT
        "fd12:3456::1", "240.0.0.1", "::ffff:192.168.1.10",  # unique local, reserved, mapped
    ],
)  # fmt: skip
def test_private_and_carrier_nat_addresses_link_nobody(address: str) -> None:
    assert address_signals(address) == []


def test_just_outside_the_private_and_carrier_ranges_is_a_person_address() -> None:
    assert [s.value for s in address_signals("100.128.0.1")] == ["100.128.0.1", "100.128.0.0/24"]
    assert [s.value for s in address_signals("172.32.0.1")] == ["172.32.0.1", "172.32.0.0/24"]


def test_an_exact_address_links_within_a_day_only() -> None:
    within = [seen("a", SignalKind.ADDRESS, "198.51.100.7"),
              seen("b", SignalKind.ADDRESS, "198.51.100.7", hours=24)]  # fmt: skip
    [link] = multi_accounting.links(within)
    assert (link.first, link.second, link.strength) == ("a", "b", Strength.MEDIUM)
    later = [within[0], seen("b", SignalKind.ADDRESS, "198.51.100.7", hours=25)]
    assert multi_accounting.links(later) == []


def test_strangers_behind_one_nat_who_play_for_money_are_never_critical() -> None:
    found = multi_accounting.links(nat("a", "b"))
    assert multi_accounting.one_person("a", found) == {"a"}  # no strong link: not one person
    played = {("a", "b"): PairHistory(tuple(f"g{i}" for i in range(10)), {"USD": 6000})}
    # An exact address (MEDIUM) alone: MEDIUM; having played each other: one step, HIGH.
    alone = multi_accounting.assess({"a", "b"}, found, {})
    together = multi_accounting.assess({"a", "b"}, found, played)
    assert alone is not None and alone.severity is Severity.MEDIUM
    assert together is not None and together.severity is Severity.HIGH
    # The /24 alone (WEAK): no alert, alone or having played each other ten times.
    network = multi_accounting.links([s for s in nat("a", "b") if s.kind is SignalKind.NETWORK])
    assert multi_accounting.assess({"a", "b"}, network, {}) is None
    assert multi_accounting.assess({"a", "b"}, network, played) is None
    # Beside the exact address, the /24 is evidence of the alert the address raises.
    assert together is not None
    evidence = {e.kind: e.details for e in together.evidence}
    assert evidence["shared_network"]["strength"] == "weak"


def test_one_device_is_one_person_and_playing_makes_it_critical() -> None:
    # b began on the computer 900 hours after a, a was back at it after b began (turns
    # both ways), and a later fact (a's, 24 hours after b began) says the place's day has
    # passed: one person.
    a_uses = Sighting("a", SignalKind.DEVICE, "dev-1", T0, T0 + timedelta(hours=910))
    found = multi_accounting.links(
        [a_uses, seen("b", SignalKind.DEVICE, "dev-1", hours=900),
         seen("a", SignalKind.NAME, "a", hours=924)]
    )
    assert multi_accounting.one_person("a", found) == {"a", "b"}
    played = multi_accounting.assess({"a", "b"}, found, {("a", "b"): PairHistory(("g1",))})
    assert played is not None and played.severity is Severity.CRITICAL


def test_a_path_is_only_as_strong_as_its_weakest_link() -> None:
    # a and b share a card; b and c a NAT address; c and d a /24. (A card, not a device: a
    # device at an address where another account is active is a shared computer, below.)
    found = multi_accounting.links(
        [
            seen("a", SignalKind.PAYMENT, "sandbox:card-1"),
            seen("b", SignalKind.PAYMENT, "sandbox:card-1"),
            *nat("b", "c"),
            seen("d", SignalKind.NETWORK, "198.51.100.0/24"),
        ]
    )
    assert multi_accounting.component("a", found) == {"a", "b", "c", "d"}
    assert multi_accounting.component("a", found, Strength.MEDIUM) == {"a", "b", "c"}
    assert multi_accounting.one_person("a", found) == {"a", "b"}
    assert multi_accounting.one_person("c", found) == {"c"}
    members = {"a", "b", "c", "d"}
    # a plays c (joined through b by a card and an address: a MEDIUM path): HIGH, not
    # CRITICAL; a plays b (one card): CRITICAL.
    a_c = multi_accounting.assess(members, found, {("a", "c"): PairHistory(("g1",))})
    assert a_c is not None and a_c.severity is Severity.HIGH
    a_d = multi_accounting.assess(members, found, {("a", "d"): PairHistory(("g2",))})
    assert a_d is not None and a_d.severity is Severity.HIGH  # a-b's card alone
    a_b = multi_accounting.assess(members, found, {("a", "b"): PairHistory(("g3",))})
    assert a_b is not None and a_b.severity is Severity.CRITICAL


def transfers(lost_by_b: int, lost_by_a: int, amount: int = 1000) -> list[chip_dumping.Transfer]:
    games = [("b", "a")] * lost_by_b + [("a", "b")] * lost_by_a
    return [
        chip_dumping.Transfer(f"s{i}", f"g{i}", loser, winner, amount, "USD", T0)
        for i, (loser, winner) in enumerate(games)
    ]


def tail(k: int, n: int) -> float:
    """P(X >= k), X ~ Binomial(n, 1/2), from the formula."""
    return sum(comb(n, i) for i in range(k, n + 1)) / 2**n


@pytest.mark.parametrize(
    ("lost", "won", "chance"),
    [(4, 0, 1 / 16), (7, 0, 1 / 128), (9, 1, 11 / 1024), (10, 0, 1 / 1024),
     (12, 1, 14 / 8192), (13, 1, 15 / 16384)],
)  # fmt: skip
def test_the_flows_chance_under_fair_play_is_the_binomial_tail(
    lost: int, won: int, chance: float
) -> None:
    assert tail(lost, lost + won) == pytest.approx(chance)
    [flow] = chip_dumping.flows(transfers(lost, won), T0, chip_dumping.DEFAULT_POLICY)
    assert flow.chance(chip_dumping.DEFAULT_POLICY) == pytest.approx(chance)
    finding = chip_dumping.assess(transfers(lost, won), T0)
    # Flagged on chance alone at 0.001 or below, and then for a person (MEDIUM) only.
    if chance <= 0.001:
        assert finding is not None and finding.severity is Severity.MEDIUM
        details = finding.evidence[0].details
        assert float(details["chance_under_fair_play"]) == pytest.approx(chance, rel=1e-5)
    else:
        assert finding is None


def test_four_straight_losses_need_one_person_or_the_givers_play() -> None:
    four = transfers(4, 0)  # 1/16 by chance between equals: friends do that
    assert chip_dumping.assess(four, T0) is None
    linked = chip_dumping.assess(four, T0, linked=True)
    assert linked is not None and linked.severity is Severity.CRITICAL
    sign = Evidence("played_below_own_level", "two losses far below their level", ("g0", "g1"))
    played = chip_dumping.assess(four, T0, corroboration=[sign])
    assert played is not None and played.severity is Severity.HIGH
    # Not a one-way flow (3 of 4 games, 3000 of 4000: 0.75 < 0.9): nothing, even linked.
    assert chip_dumping.assess(transfers(3, 1), T0, linked=True) is None
    assert chip_dumping.examinable(four, T0, chip_dumping.DEFAULT_POLICY) is not None
    assert chip_dumping.examinable(transfers(3, 1), T0, chip_dumping.DEFAULT_POLICY) is None


def test_the_givers_play_corroborates_a_small_flow_the_streak_and_one_person_do_not() -> None:
    # Four games of 350 lost one way: 1400 net, under the 2000 floor. The floor is for
    # the streak's routes: alone, or linked (a freeze), four such games are nothing.
    small = transfers(4, 0, amount=350)
    assert chip_dumping.assess(small, T0) is None
    assert chip_dumping.assess(small, T0, linked=True) is None
    # The play is read (examinable), and two thrown games make it HIGH, the flow's
    # evidence first with its 1400 net.
    policy = chip_dumping.DEFAULT_POLICY
    examined = chip_dumping.examinable(small, T0, policy)
    assert examined is not None and (examined.giver, examined.net) == ("b", 1400)
    sign = Evidence("played_below_own_level", "two losses far below their level", ("g0", "g1"))
    played = chip_dumping.assess(small, T0, corroboration=[sign])
    assert played is not None and played.severity is Severity.HIGH
    assert [e.kind for e in played.evidence] == ["one_directional_flow", "played_below_own_level"]
    assert played.evidence[0].details["net_minor"] == "1400"
    # One person whose play shows it: HIGH still, for a person; a freeze needs the floor.
    both = chip_dumping.assess(small, T0, linked=True, corroboration=[sign])
    assert both is not None and both.severity is Severity.HIGH
    # Still a one-way streak of min_games: three games, or 3 of 4 one way, are not read.
    assert chip_dumping.examinable(small[:3], T0, policy) is None
    back = transfers(3, 1, amount=350)
    assert chip_dumping.examinable(back, T0, policy) is None
    assert chip_dumping.assess(back, T0, corroboration=[sign]) is None


def test_ten_fair_looking_games_between_nat_strangers_are_not_dumping() -> None:
    # 7 of 10 lost (p = 176/1024 = 0.17): a better player, or luck.
    assert tail(7, 10) == pytest.approx(176 / 1024)
    assert chip_dumping.assess(transfers(7, 3), T0) is None


def test_a_thousand_strangers_on_one_block_are_a_chain_of_links_and_no_alert() -> None:
    office = [seen(f"p{i:04}", SignalKind.NETWORK, "2001:db8:1:2::/64", hours=i / 100)
              for i in range(1000)]  # fmt: skip
    found = multi_accounting.links(office)
    assert len(found) == 999  # one per account after the first, not 499,500 pairs
    assert multi_accounting.component("p0500", found) == {f"p{i:04}" for i in range(1000)}
    assert multi_accounting.assess({s.account_id for s in office}, found, {}) is None


def test_a_chain_joins_exactly_the_accounts_within_the_window_of_each_other() -> None:
    def used(account: str, start: float, end: float) -> Sighting:
        return Sighting(account, SignalKind.ADDRESS, "198.51.100.7",
                        T0 + timedelta(hours=start), T0 + timedelta(hours=end))  # fmt: skip

    # a used it from 0 to 100 h; b at 50 h (inside a's use); c at 120 h (20 h after a, 70 h
    # after b: within 24 h of a only); d at 150 h (30 h after a: nobody's); e at 160 h
    # (10 h after d).
    sightings = [used("a", 0, 100), used("b", 50, 50), used("c", 120, 120),
                 used("d", 150, 150), used("e", 160, 160)]  # fmt: skip
    pairs = {(link.first, link.second) for link in multi_accounting.links(sightings)}
    assert pairs == {("a", "b"), ("a", "c"), ("d", "e")}
    assert multi_accounting.component("b", multi_accounting.links(sightings)) == {"a", "b", "c"}


CAFE = "203.0.113.50"


def at_cafe(account: str, device: str, hours: float = 0) -> list[Sighting]:
    """An account logging in at the café's address on one of its computers."""
    return [seen(account, SignalKind.DEVICE, device, hours),
            seen(account, SignalKind.ADDRESS, CAFE, hours)]  # fmt: skip


def test_a_cafes_computer_is_not_one_person_from_its_first_shared_login() -> None:
    # The café's first day: a and c take turns at computer 1, b sits at computer 2. Two
    # accounts on computer 1 is what one person's second account looks like; b, active at
    # the same address the same day on another computer, says it is a shared place.
    found = multi_accounting.links(
        [*at_cafe("a", "pc-1"), *at_cafe("b", "pc-2", hours=1), *at_cafe("c", "pc-1", hours=3)]
    )
    device = [k for k in found if k.kind is SignalKind.DEVICE]
    assert [(k.first, k.second, k.strength) for k in device] == [("a", "c", Strength.MEDIUM)]
    assert multi_accounting.one_person("a", found) == {"a"}  # no restriction, no CRITICAL
    # Played each other too: still no alert (medium links only are context).
    history = {("a", "c"): PairHistory(("g1",))}
    assert multi_accounting.assess(multi_accounting.one_person("a", found), found, history) is None


def test_a_computer_used_by_more_accounts_than_one_person_runs_is_shared() -> None:
    # Four accounts on one computer a minute apart (one sitting), each from an address of
    # its own (nobody else there): 4 > 3, a shared computer. Three are one person's ring.
    # Each account made there and then (signed up together: one person's at three).
    four = [s for i, a in enumerate("abcd")
            for s in (seen(a, SignalKind.DEVICE, "pc-9", hours=i / 60), *signed_up(a, i / 60))]
    assert {k.strength for k in multi_accounting.links(four)} == {Strength.MEDIUM}
    assert multi_accounting.one_person("a", multi_accounting.links(four)) == {"a"}
    ring = four[:9]
    assert multi_accounting.one_person("a", multi_accounting.links(ring)) == {"a", "b", "c"}


def test_a_ring_of_three_on_one_device_alone_at_its_address_is_one_person() -> None:
    # The tuning population's ring: signed up together on one device at one address,
    # nobody else there.
    ring = [s for a in "xyz" for s in (seen(a, SignalKind.DEVICE, "ring-pc"),
                                       seen(a, SignalKind.ADDRESS, "198.51.100.9"),
                                       *signed_up(a))]  # fmt: skip
    found = multi_accounting.links(ring)
    assert multi_accounting.one_person("x", found) == {"x", "y", "z"}
    finding = multi_accounting.assess({"x", "y", "z"}, found, {})
    assert finding is not None and finding.severity is Severity.HIGH
    # Someone at that address 25 hours later (beyond its window) changes nothing.
    later = multi_accounting.links([*ring, seen("w", SignalKind.ADDRESS, "198.51.100.9", 25)])
    assert multi_accounting.one_person("x", later) == {"x", "y", "z"}


def test_a_card_shared_at_the_cafe_is_still_one_person() -> None:
    # Two café players who pay with one card: the card links them at full strength.
    sightings = [*at_cafe("a", "pc-1"), *at_cafe("b", "pc-2", hours=1), *at_cafe("c", "pc-1", 2),
                 seen("b", SignalKind.PAYMENT, "sandbox:fp-7"),
                 seen("c", SignalKind.PAYMENT, "sandbox:fp-7", hours=200)]  # fmt: skip
    found = multi_accounting.links(sightings)
    assert multi_accounting.one_person("b", found) == {"b", "c"}
    finding = multi_accounting.assess({"b", "c"}, found, {})
    assert finding is not None and finding.subjects == ("b", "c")
    assert finding.severity is Severity.HIGH
    kinds = {e.kind: e.details["strength"] for e in finding.evidence if "strength" in e.details}
    # b and c sat at different computers: the card and the café's address join them.
    assert kinds == {"shared_payment": "strong", "shared_address": "medium"}


def test_a_computers_next_user_waits_for_the_places_day() -> None:
    # The café's first day, nobody else there yet: a at computer 1 at noon, c at the same
    # computer 5 hours later (not one sitting). Two accounts on one computer alone at their
    # address is what one person's second account looks like, and what a café's first
    # customers look like until its others arrive: the link is medium (no alert, no
    # restriction) until a is back at the computer and a day has passed since c began.
    first_day = [*at_cafe("a", "pc-1"), *at_cafe("c", "pc-1", hours=5)]
    found = multi_accounting.links(first_day)
    assert [(k.kind, k.strength) for k in found if k.kind is SignalKind.DEVICE] == [
        (SignalKind.DEVICE, Strength.MEDIUM)
    ]
    assert multi_accounting.one_person("a", found) == {"a"}
    # The next morning (hour 20) b sits at computer 2: a shared place, medium for good.
    morning = multi_accounting.links([*first_day, *at_cafe("b", "pc-2", hours=20)])
    assert multi_accounting.one_person("a", morning) == {"a"}
    # Nobody else came: a signs in at computer 1 again 29 hours on (a day after c began,
    # hour 5 + 24), turns both ways: one person's computer after all, HIGH.
    assert multi_accounting.one_person("a", multi_accounting.links(again(first_day, 29))) == {
        "a", "c"
    }
    # 28.9 hours: the day has not passed yet.
    assert multi_accounting.one_person("a", multi_accounting.links(again(first_day, 28.9))) == {
        "a"
    }


def test_a_computer_handed_on_is_not_one_person_however_long_it_waits() -> None:
    # A second-hand laptop, a café's first two customers: a used the computer at noon and
    # has not been back; c began 18 minutes later (after a's visit). Nobody else is ever at
    # the place, and weeks pass: still medium, since a computer handed on is two people as
    # often as one. A shared card would still link them at full strength.
    c_uses = Sighting("c", SignalKind.DEVICE, "pc-1", T0 + timedelta(hours=0.3),
                      T0 + timedelta(days=21))
    weeks = [*at_cafe("a", "pc-1"), c_uses, seen("c", SignalKind.ADDRESS, CAFE, hours=0.3)]
    found = multi_accounting.links(weeks)
    assert [(k.kind, k.strength) for k in found if k.kind is SignalKind.DEVICE] == [
        (SignalKind.DEVICE, Strength.MEDIUM)
    ]
    assert multi_accounting.one_person("c", found) == {"c"}  # no alert, no restriction
    # a back at the computer after c began: turns both ways, one person (the day has passed).
    back = again(weeks, 24 * 21 + 1)
    assert multi_accounting.one_person("c", multi_accounting.links(back)) == {"a", "c"}


def again(sightings: list[Sighting], hours: float) -> list[Sighting]:
    """a seen again at ``hours`` with each of its identifiers (its sightings' last use)."""
    later = T0 + timedelta(hours=hours)
    return [
        Sighting(s.account_id, s.kind, s.value, s.first_seen, later) if s.account_id == "a" else s
        for s in sightings
    ]


def signed_up(account: str, hours: float = 0) -> list[Sighting]:
    """The sightings an account's sign-up reports: its mailbox and its display name."""
    return [seen(account, SignalKind.EMAIL, f"{account}@example.org", hours),
            seen(account, SignalKind.NAME, f"player{account}", hours)]  # fmt: skip


def test_two_accounts_signed_up_in_one_sitting_are_one_person_at_once() -> None:
    # One person making accounts at one computer: each made and first used there within
    # two minutes, the second within two minutes of the first's use, alone at the address:
    # strong from the second login.
    together = [*at_cafe("x", "pc-7"), *signed_up("x"),
                *at_cafe("y", "pc-7", hours=1.5 / 60), *signed_up("y", 1.4 / 60)]
    assert multi_accounting.one_person("x", multi_accounting.links(together)) == {"x", "y"}
    # Three minutes apart is a handover (a visit comes first), made there or not.
    apart = [*at_cafe("x", "pc-7"), *signed_up("x"),
             *at_cafe("y", "pc-7", hours=3 / 60), *signed_up("y", 3 / 60)]
    assert multi_accounting.one_person("x", multi_accounting.links(apart)) == {"x"}
    # y made the day before it came to the computer: not made in the sitting.
    old = [*at_cafe("x", "pc-7"), *signed_up("x"),
           *at_cafe("y", "pc-7", hours=1 / 60), *signed_up("y", -24)]
    assert multi_accounting.one_person("x", multi_accounting.links(old)) == {"x"}


def test_a_sitting_alone_is_a_handover_until_the_first_account_comes_back() -> None:
    # The held-out café's next customer, 1.3 minutes after the first one's login, both
    # accounts made weeks before, nobody else at the café yet: one person switching
    # accounts looks the same, so the link is medium (no alert, no restriction).
    sitting = [*at_cafe("a", "pc-7"), *signed_up("a", -500),
               *at_cafe("c", "pc-7", hours=1.3 / 60), *signed_up("c", -300)]
    found = multi_accounting.links(sitting)
    assert [(k.kind, k.strength) for k in found if k.kind is SignalKind.DEVICE] == [
        (SignalKind.DEVICE, Strength.MEDIUM)
    ]
    assert multi_accounting.one_person("a", found) == {"a"}
    # a's first use days before, its latest a minute before c began: the same.
    a_uses = Sighting("a", SignalKind.DEVICE, "pc-7", T0 - timedelta(hours=72), T0)
    latest = [a_uses, *sitting[1:]]
    assert multi_accounting.one_person("a", multi_accounting.links(latest)) == {"a"}
    # a back at the computer the next evening (turns both ways), a day after c began with
    # nobody else at the place: one person's computer after all (the consultant whose
    # helped account plays on another day).
    assert multi_accounting.one_person("a", multi_accounting.links(again(sitting, 25))) == {
        "a", "c"
    }
