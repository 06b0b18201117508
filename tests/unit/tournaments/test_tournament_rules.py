"""A tournament's rules as data: every kind made, every impossible rule refused by name."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.kit.errors import InvalidArgument
from services.kit.money_bounds import INT64_MAX
from services.tournaments.domain.rules import (
    InvalidRules,
    Kind,
    Rules,
    Scheduled,
    SitAndGo,
    validate_satellite_target,
)

START = datetime(2026, 12, 24, 18, 0, tzinfo=UTC)


def sit_and_go(**changes: Any) -> Rules:
    fields: dict[str, Any] = {
        "start": SitAndGo(8),
        "match_lengths": (3, 5, 7),
        "clock": "standard",
        "currency": "USD",
        "buy_in": 1000,
        "entry_fee": 100,
        "prize_table": "standard",
    }
    return Rules(**{**fields, **changes})


def scheduled(min_entrants: int = 4, max_entrants: int = 128, **changes: Any) -> Scheduled:
    fields: dict[str, Any] = {
        "starts_at": START,
        "registration_opens_at": START - timedelta(days=2),
        "registration_closes_at": START - timedelta(minutes=5),
        "min_entrants": min_entrants,
        "max_entrants": max_entrants,
    }
    return Scheduled(**{**fields, **changes})


def test_a_sit_and_go() -> None:
    rules = sit_and_go()
    assert rules.kind is Kind.SIT_AND_GO
    assert (rules.min_field, rules.max_field) == (8, 8)
    assert rules.ticket_price == 1100
    assert rules.prize_pool(8) == 8000
    assert (rules.crawford, rules.jacoby, rules.beaver) == (True, False, False)


def test_match_lengths_grow_by_round_and_the_last_one_holds() -> None:
    rules = sit_and_go(start=SitAndGo(16), match_lengths=(3, 5, 7))
    assert [rules.match_length(r) for r in (1, 2, 3, 4)] == [3, 5, 7, 7]
    with pytest.raises(InvalidArgument, match="from 1"):
        rules.match_length(0)


def test_a_scheduled_event() -> None:
    rules = sit_and_go(start=scheduled())
    assert rules.kind is Kind.SCHEDULED
    assert (rules.min_field, rules.max_field) == (4, 128)


def test_a_freeroll_in_play_money() -> None:
    rules = sit_and_go(currency="PLAY", buy_in=0, entry_fee=0, added_prize=50_000)
    assert rules.kind is Kind.FREEROLL
    assert rules.prize_pool(8) == 50_000


def test_a_satellite() -> None:
    rules = sit_and_go(prize_table="tickets", target_tournament_id="t-main", buy_in=110)
    assert rules.kind is Kind.SATELLITE


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"start": SitAndGo(6)}, "Sit & Go has .* seats, not 6"),
        ({"start": SitAndGo(64)}, "not 64"),
        ({"match_lengths": ()}, "match length for 1 to 3 rounds, not 0"),
        ({"match_lengths": (1, 3, 5, 7)}, "1 to 3 rounds, not 4"),
        ({"match_lengths": (0,)}, "1 to 25 points"),
        ({"match_lengths": (26,)}, "1 to 25 points"),
        ({"match_lengths": (7, 5)}, "never shrink"),
        ({"clock": "bullet"}, "preset by name"),
        ({"crawford": False}, "Crawford rule on"),
        ({"jacoby": True}, "no Jacoby"),
        ({"beaver": True}, "no beavers"),
        ({"currency": "usd"}, "ISO-4217"),
        ({"currency": "DOLLARS"}, "ISO-4217"),
        ({"buy_in": -1}, "the buy-in must be 0 to"),
        ({"buy_in": 10.0}, "the buy-in is a whole number"),
        ({"entry_fee": True}, "the entry fee is a whole number"),
        ({"added_prize": -5}, "the added prize must be"),
        ({"buy_in": 0}, "freeroll: no entry fee"),
        ({"buy_in": 0, "entry_fee": 0}, "a prize the house adds"),
        ({"prize_table": "tickets"}, "name its id"),
        ({"target_tournament_id": "t-main"}, "only a satellite"),
        ({"prize_table": "65-35"}, "no prize table '65-35'"),
    ],
)
def test_impossible_rules_are_refused_naming_the_field(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(InvalidRules, match=reason):
        sit_and_go(**changes)


@pytest.mark.parametrize(
    ("start", "reason"),
    [
        (scheduled(starts_at=START.replace(tzinfo=None)), "time zone"),
        (scheduled(registration_closes_at=START + timedelta(minutes=1)), "no later than"),
        (scheduled(registration_opens_at=START), "opens before it closes"),
        (scheduled(min_entrants=1), "2 <= minimum"),
        (scheduled(min_entrants=64, max_entrants=32), "not 64..32"),
        (scheduled(max_entrants=1025), "<= 1024"),
    ],
)
def test_an_impossible_schedule_is_refused(start: Scheduled, reason: str) -> None:
    with pytest.raises(InvalidRules, match=reason):
        sit_and_go(start=start)


def test_a_full_fields_money_must_fit_the_ledger() -> None:
    # 2^62 x 32 seats passes int64.
    with pytest.raises(InvalidRules, match="a full field's buy-ins and fees"):
        sit_and_go(start=SitAndGo(32), buy_in=2**62, entry_fee=0)
    # Buy-ins that fit, plus an added prize that does not.
    with pytest.raises(InvalidRules, match=r"prize pool .* passes int64"):
        sit_and_go(start=SitAndGo(2), match_lengths=(1,), buy_in=2**61, entry_fee=0,
                   added_prize=INT64_MAX - 2**61)


def test_a_satellites_target_is_checked_against_its_rules() -> None:
    target = sit_and_go(buy_in=1000, entry_fee=100)  # a ticket is worth 1100
    satellite = sit_and_go(prize_table="tickets", target_tournament_id="t-main",
                           buy_in=150, entry_fee=15)  # 8 x 150 = 1200 buys one
    validate_satellite_target(satellite, "t-main", target)
    with pytest.raises(InvalidRules, match="names target 't-main', not 't-other'"):
        validate_satellite_target(satellite, "t-other", target)
    with pytest.raises(InvalidRules, match="target's currency: EUR, not USD"):
        validate_satellite_target(satellite, "t-main", replace(target, currency="EUR"))
    with pytest.raises(InvalidRules, match=r"buy-in \(1100\) is below the ticket"):
        validate_satellite_target(replace(satellite, buy_in=1100), "t-main", target)
    with pytest.raises(InvalidRules, match=r"smallest field \(8\) does not buy one ticket"):
        validate_satellite_target(replace(satellite, buy_in=100), "t-main", target)
    with pytest.raises(InvalidRules, match="only a satellite"):
        validate_satellite_target(target, "t-main", target)
