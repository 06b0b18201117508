"""A table-stakes table in the lobby domain: its rules, its games, its end, its leaver.

$5.00 a point (500 cents), $20.00 brought by each player (2,000).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from services.kit.money_bounds import AmountOutOfBounds, MoneyBounds
from services.matchmaking.domain.tables import Kind, Status, Table
from tests.unit.matchmaking.test_lobby_tables import JOINER, NOW, rules, table


def playing() -> Table:
    open_table = table(rules=rules(table_stakes_minor=2_000))
    claimed = open_table.claim(JOINER, "a-1", NOW + timedelta(seconds=60), (1500.0, 1500.0))
    return claimed.holds_placed("a-1", ("h-owner", "h-joiner")).started("a-1", "g-1")


def test_the_bring_in_is_each_holds_amount_and_the_most_a_player_can_lose() -> None:
    stakes = rules(table_stakes_minor=2_000)
    assert stakes.table_stakes and stakes.opening_hold() == 2_000
    assert stakes.largest_loss(MoneyBounds.defaults()) == 2_000
    bounds = MoneyBounds.from_env({"TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD": "1999"})
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_USD"):
        stakes.largest_loss(bounds)


def test_table_stakes_are_refused_on_a_match_or_below_one_game() -> None:
    with pytest.raises(InvalidArgument, match="money-game option"):
        rules(kind=Kind.MATCH, match_length=3, table_stakes_minor=2_000)
    with pytest.raises(InvalidArgument, match="at least one game at cube 1"):
        rules(table_stakes_minor=499)
    with pytest.raises(InvalidArgument, match="positive amount"):
        rules(table_stakes_minor=-1)


def test_a_session_starts_with_both_bring_ins_and_goes_on_while_both_cover_a_game() -> None:
    started = playing()
    assert started.games_played == 1 and started.stakes_left() == (2_000, 2_000)
    after = started.settled("g-1", {"owner": 500, "joiner": 3_410})
    assert after.stakes_left() == (500, 3_410) and after.at_risk() == 500
    assert after.goes_on()
    assert after.settled("g-0", {"owner": 0, "joiner": 0}) == after  # another game's
    second = after.next_game("g-2")
    assert (second.game_id, second.games_played) == ("g-2", 2)
    assert second.next_game("g-2") == second  # a replay starts nothing twice
    over = second.settled("g-2", {"owner": 499, "joiner": 3_401})
    assert not over.goes_on()  # 499 cannot pay a game at cube 1
    assert over.session_end_reason() == "table stakes: joiner holds both stakes"


def test_either_player_may_leave_and_no_further_game_starts() -> None:
    leaving = playing().leave_after_game("joiner")
    assert leaving.leaving_id == "joiner" and leaving.status is Status.PLAYING
    assert not leaving.settled("g-1", {"owner": 2_500, "joiner": 1_450}).goes_on()
    assert leaving.session_end_reason() == "table stakes: joiner left the table between games"
    assert leaving.leave_after_game("owner") == leaving  # the first leaver is the one
    with pytest.raises(NotFound):
        playing().leave_after_game("someone")
    with pytest.raises(FailedPrecondition, match="not playing table stakes"):
        table(rules=rules(table_stakes_minor=2_000)).leave_after_game("owner")
