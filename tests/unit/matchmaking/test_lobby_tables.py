"""The lobby's table domain (services/matchmaking/domain/tables.py): rules, who may sit, states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from services.kit.money_bounds import AmountOutOfBounds, MoneyBounds
from services.matchmaking.domain.tables import (
    Kind,
    RatingRange,
    Rules,
    Sitter,
    Status,
    Table,
    parse_rules,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
OWNER = Sitter("owner", "MT", "203.0.113.10", "dev-1")
JOINER = Sitter("joiner", "MT", "203.0.113.11")


def rules(**overrides: Any) -> Rules:
    fields: dict[str, Any] = {
        "kind": Kind.MONEY_GAME,
        "match_length": 0,
        "stake_minor": 500,
        "currency": "USD",
        "cube_cap": 0,
        "beaver": False,
        "jacoby": False,
        "crawford": None,
        "clock": "",
    }
    return parse_rules(**{**fields, **overrides})


def table(**overrides: Any) -> Table:
    fields: dict[str, Any] = {"table_id": "t-1", "owner": OWNER, "rules": rules(), "now": NOW}
    return Table.open(**{**fields, **overrides})


def test_defaults_cube_64_standard_clock_crawford_on_for_matches_only() -> None:
    money = rules()
    assert (money.cube_cap, money.clock, money.crawford) == (64, "standard", False)
    match = rules(kind=Kind.MATCH, match_length=5)
    assert match.crawford is True
    assert rules(kind=Kind.MATCH, match_length=5, crawford=False).crawford is False
    assert rules(beaver=True, jacoby=True, cube_cap=8, clock="blitz") == Rules(
        Kind.MONEY_GAME, 0, 500, "USD", 8, True, True, False, "blitz"
    )


@pytest.mark.parametrize(
    ("overrides", "says"),
    [
        ({"kind": None}, "kind"),
        ({"kind": Kind.MATCH, "match_length": 0}, "1..25"),
        ({"kind": Kind.MATCH, "match_length": 26}, "1..25"),
        ({"match_length": 3}, "no match length"),
        ({"stake_minor": 0}, "positive"),
        ({"stake_minor": -5}, "positive"),
        ({"currency": "usd"}, "ISO-4217"),
        ({"currency": ""}, "ISO-4217"),
        ({"cube_cap": 3}, "power of two"),
        ({"cube_cap": 128}, "power of two"),
        ({"kind": Kind.MATCH, "match_length": 3, "beaver": True}, "money-game options"),
        ({"kind": Kind.MATCH, "match_length": 3, "jacoby": True}, "money-game options"),
        ({"crawford": True}, "Crawford rule is for matches"),
        ({"clock": "bullet"}, "standard, blitz"),
    ],
)
def test_bad_rules_are_refused_saying_what_to_fix(overrides: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        rules(**overrides)


def test_opening_hold_is_a_backgammon_for_money_games_and_the_stake_for_matches() -> None:
    assert rules(stake_minor=500).opening_hold() == 1500
    assert rules(kind=Kind.MATCH, match_length=7, stake_minor=1000).opening_hold() == 1000
    assert rules(currency="PLAY").real_money is False
    assert rules(currency="EUR").real_money is True


def test_rating_range_bounds() -> None:
    span = RatingRange.parse(1400, 1600)
    assert span.admits(1400) and span.admits(1600) and not span.admits(1399.9)
    assert not span.admits(1600.5)
    assert RatingRange.parse(0, 0) == RatingRange() and RatingRange().admits(100)
    assert RatingRange.parse(1500, 0).admits(9999)
    with pytest.raises(InvalidArgument, match="empty"):
        RatingRange.parse(1700, 1600)
    with pytest.raises(InvalidArgument, match="up to 4000"):
        RatingRange.parse(0, 4001)


def test_a_player_cannot_sit_against_themselves() -> None:
    with pytest.raises(FailedPrecondition, match="against yourself"):
        table().check_join("owner", 1500, None, NOW)
    with pytest.raises(InvalidArgument, match="someone else"):
        table(invited_account_id="owner")


def test_a_claimed_seat_refuses_a_second_joiner_even_past_its_deadline() -> None:
    claimed = table().claim(JOINER, "attempt-1", NOW + timedelta(seconds=30), (1500.0, 1500.0))
    assert claimed.status is Status.SEATING and claimed.seats[1].sitter == JOINER
    for later in (29, 30, 3600):
        # Past the deadline its holds or game may exist: the recovery resumes it instead.
        with pytest.raises(FailedPrecondition, match="another player is sitting down"):
            claimed.check_join("third", 1500, None, NOW + timedelta(seconds=later))
    assert not claimed.attempt_expired(NOW + timedelta(seconds=29))
    assert claimed.attempt_expired(NOW + timedelta(seconds=30))
    resumed = claimed.resumed(NOW + timedelta(seconds=90))
    assert resumed.attempt is not None and resumed.attempt.attempt_id == "attempt-1"
    assert not resumed.attempt_expired(NOW + timedelta(seconds=60))


def test_private_tables_rating_ranges_and_forbidden_pairs_refuse_with_the_reason() -> None:
    private = table(invited_account_id="guest")
    with pytest.raises(PermissionDenied, match="private"):
        private.check_join("joiner", 1500, None, NOW)
    private.check_join("guest", 1500, None, NOW)
    assert private.visible_to("guest") and private.visible_to("owner")
    assert not private.visible_to("joiner")
    ranged = table(rating_range=RatingRange(1600, 1800))
    with pytest.raises(FailedPrecondition, match=r"1600\.\.1800; yours is 1500"):
        ranged.check_join("joiner", 1500, None, NOW)
    with pytest.raises(FailedPrecondition, match="your accounts are linked"):
        table().check_join("joiner", 1500, "your accounts are linked", NOW)


def test_a_started_table_is_full_and_keeps_both_ratings_and_holds() -> None:
    claimed = table().claim(JOINER, "a-1", NOW + timedelta(seconds=30), (1500.0, 1620.5))
    assert claimed.recorded_holds is None and claimed.ratings == (1500.0, 1620.5)
    held = claimed.holds_placed("a-1", ("h-owner", "h-joiner"))
    assert held.recorded_holds == ("h-owner", "h-joiner") and held.status is Status.SEATING
    playing = held.started("a-1", "g-1")
    assert playing.status is Status.PLAYING and playing.game_id == "g-1"
    # The attempt finished twice (its process and the recovery): the second changes nothing.
    assert playing.started("a-1", "g-1") == playing
    assert [(s.account_id, s.rating, s.hold_id) for s in playing.seats] == [
        ("owner", 1500.0, "h-owner"),
        ("joiner", 1620.5, "h-joiner"),
    ]
    with pytest.raises(FailedPrecondition, match="full"):
        playing.check_join("third", 1500, None, NOW)
    with pytest.raises(FailedPrecondition, match="started its game"):
        playing.check_owner_action("owner", "close")


def test_a_failed_attempt_gives_the_seat_back_and_a_stale_one_changes_nothing() -> None:
    claimed = table().claim(JOINER, "a-1", NOW + timedelta(seconds=30), (1500.0, 1620.5))
    freed = claimed.given_back("a-1")
    assert freed.status is Status.OPEN and [s.account_id for s in freed.seats] == ["owner"]
    assert freed.attempt is None
    retaken = freed.claim(Sitter("third"), "a-2", NOW + timedelta(seconds=60), (1500.0, 1500.0))
    assert retaken.given_back("a-1") == retaken  # the first attempt no longer holds it
    with pytest.raises(FailedPrecondition, match="given to another player"):
        retaken.started("a-1", "g")
    with pytest.raises(FailedPrecondition, match="given to another player"):
        retaken.holds_placed("a-1", ("h1", "h2"))
    held = claimed.holds_placed("a-1", ("h-owner", "h-joiner"))
    assert held.given_back("a-1").seats[0].hold_id == ""  # the owner's released hold is gone


def test_only_the_owner_leaves_or_closes_and_only_before_the_game() -> None:
    open_table = table()
    with pytest.raises(NotFound):
        open_table.check_owner_action("stranger", "close")
    claimed = open_table.claim(JOINER, "a-1", NOW + timedelta(seconds=30), (1500.0, 1620.5))
    with pytest.raises(PermissionDenied, match="only the owner"):
        claimed.check_owner_action("joiner", "leave")
    with pytest.raises(FailedPrecondition, match="sitting down"):
        claimed.check_owner_action("owner", "close")
    closed = open_table.closed("closed by its owner")
    assert closed.status is Status.CLOSED and closed.close_reason == "closed by its owner"
    with pytest.raises(FailedPrecondition, match="closed already"):
        closed.check_owner_action("owner", "close")
    with pytest.raises(FailedPrecondition, match="closed"):
        closed.check_join("joiner", 1500, None, NOW)


def test_a_table_closes_when_its_own_game_is_over() -> None:
    claimed = table().claim(JOINER, "a-1", NOW + timedelta(seconds=30), (1500.0, 1500.0))
    playing = claimed.started("a-1", "g-1")
    assert playing.finished("g-other", "its game ended") == playing
    assert claimed.finished("g-1", "its game ended") == claimed  # not playing yet
    over = playing.finished("g-1", "its game ended")
    assert (over.status, over.close_reason) == (Status.CLOSED, "its game ended")


def test_an_int64_stake_has_no_opening_hold_past_int64() -> None:
    with pytest.raises(AmountOutOfBounds, match="the opening hold"):
        rules(stake_minor=2**63 - 1).opening_hold()


def test_a_tables_stake_and_largest_loss_are_held_to_the_operators_bounds() -> None:
    bounds = MoneyBounds.defaults()
    assert rules(stake_minor=500, cube_cap=8).largest_loss(bounds) == 500 * 8 * 3
    assert rules(kind=Kind.MATCH, match_length=5, stake_minor=900).largest_loss(bounds) == 900
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_USD"):
        rules(stake_minor=2**63 - 1).largest_loss(bounds)
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_STAKE_PLAY"):
        rules(stake_minor=3 * 10**18, currency="PLAY").largest_loss(bounds)
    tight = MoneyBounds.from_env({"TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD": "12000"})
    assert rules(stake_minor=500, cube_cap=8).largest_loss(tight) == 12000
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD"):
        rules(stake_minor=500, cube_cap=16).largest_loss(tight)
