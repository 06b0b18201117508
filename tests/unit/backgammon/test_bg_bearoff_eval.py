"""Two-sided bear-off figures: exact small cases worked out from the dice, and laws."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from services.backgammon import bearoff, movegen
from services.backgammon.bearoff import OneSidedDatabase, home_of
from services.backgammon.bearoff_eval import (
    CubeAccess,
    MoneyCube,
    Probabilities,
    cubeful_before_roll,
    equity_after_roll,
    is_bearoff,
    janowski,
    probabilities,
)
from services.backgammon.board import BAR, CHECKERS, STARTING_BOARD, Board
from tests.unit.backgammon.test_bg_bearoff import THROWS, complete_database


@pytest.fixture(scope="module", autouse=True)
def full(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OneSidedDatabase]:
    database = complete_database(request.config, tmp_path_factory)
    bearoff.use_database(database)
    yield database
    bearoff.use_database(OneSidedDatabase())


def side(*home: int) -> tuple[int, ...]:
    return tuple(home) + (0,) * (BAR + 1 - len(home))


def bearoff_board(mine: tuple[int, ...], theirs: tuple[int, ...]) -> Board:
    return Board(side(*mine), side(*theirs))


def random_home(rng: random.Random, checkers: int) -> tuple[int, ...]:
    counts = [0] * 6
    for _ in range(checkers):
        counts[rng.randrange(6)] += 1
    return tuple(counts)


def finishes_in_one_roll(home: tuple[int, ...]) -> float:
    """The share of the 36 throws with a play that bears everything off (move generator)."""
    board = Board(side(*home), side())
    done = sum(
        any(not sum(play.result.player) for play in movegen.legal_plays(board, dice))
        for dice in THROWS
    )
    return done / 36


def test_what_counts_as_a_bearoff() -> None:
    assert is_bearoff(bearoff_board((1,), (0, 0, 0, 0, 0, 1)))
    assert not is_bearoff(STARTING_BOARD)
    assert not is_bearoff(bearoff_board((0, 0, 0, 0, 0, 0, 1), (1,)))  # a checker on the 7-point
    assert not is_bearoff(bearoff_board((), (1,)))  # the game is over
    with pytest.raises(ValueError):
        probabilities(STARTING_BOARD)


def test_one_checker_each_on_the_one_point_the_side_on_roll_always_wins() -> None:
    chances = probabilities(bearoff_board((1,), (1,)))
    assert chances == Probabilities(1.0, 0.0, 0.0)


def test_six_point_against_one_point_wins_when_the_roll_bears_off() -> None:
    chances = probabilities(bearoff_board((0, 0, 0, 0, 0, 1), (1,)))
    assert chances.win == pytest.approx(finishes_in_one_roll((0, 0, 0, 0, 0, 1)), abs=1e-15)
    assert chances.win == pytest.approx(27 / 36, abs=1e-15)  # misses: 21, 31, 41, 32, 11


def test_gammons_need_fifteen_checkers_on_the_board() -> None:
    chances = probabilities(bearoff_board((1,), (0, 0, 0, 0, 0, CHECKERS)))
    assert (chances.win, chances.lose_gammon) == (1.0, 0.0)
    assert chances.win_gammon == pytest.approx(1.0, abs=1e-12)  # off at once: a gammon
    losing = probabilities(bearoff_board((0, 0, 0, 0, 0, CHECKERS), (1,)))
    first = bearoff.one_sided((0, 0, 0, 0, 0, CHECKERS)).first_off
    assert losing.win == 0.0
    assert losing.lose_gammon == pytest.approx(1.0 - first.at(1), abs=1e-15)
    assert probabilities(bearoff_board((0, 0, 0, 0, 14), (0, 0, 0, 0, 0, 14))).win_gammon == 0.0


def test_probabilities_are_probabilities_and_adding_a_checker_never_helps() -> None:
    rng = random.Random(11)
    for _ in range(150):
        mine = random_home(rng, rng.randint(1, CHECKERS - 1))
        theirs = random_home(rng, rng.randint(1, CHECKERS - 1))
        chances = probabilities(bearoff_board(mine, theirs))
        assert 0.0 <= chances.win_gammon <= chances.win <= 1.0
        assert 0.0 <= chances.lose_gammon <= chances.lose
        point = rng.randrange(6)
        heavier = tuple(n + (i == point) for i, n in enumerate(mine))
        assert probabilities(bearoff_board(heavier, theirs)).win <= chances.win + 1e-12
        heavier = tuple(n + (i == point) for i, n in enumerate(theirs))
        assert probabilities(bearoff_board(mine, heavier)).win >= chances.win - 1e-12


def test_being_on_roll_is_worth_something_in_equal_positions() -> None:
    rng = random.Random(5)
    for _ in range(50):
        home = random_home(rng, rng.randint(1, CHECKERS))
        assert probabilities(bearoff_board(home, home)).win >= 0.5


def test_cube_ownership_orders_the_equities() -> None:
    rng = random.Random(2)
    for _ in range(100):
        board = bearoff_board(random_home(rng, rng.randint(1, 15)), random_home(rng, 15))
        chances = probabilities(board)
        values = {
            access: janowski(chances, MoneyCube(access), 0.6)
            for access in (CubeAccess.OWNED, CubeAccess.CENTRED, CubeAccess.UNAVAILABLE)
        }
        assert values[CubeAccess.OWNED] >= values[CubeAccess.CENTRED] - 1e-12
        assert values[CubeAccess.CENTRED] >= values[CubeAccess.UNAVAILABLE] - 1e-12
        dead = janowski(chances, MoneyCube(CubeAccess.DEAD), 0.6)
        assert dead == pytest.approx(chances.cubeless_equity(), abs=1e-15)
        for access in values:
            cube = MoneyCube(access)
            assert cubeful_before_roll(chances, cube) >= values[access] - 1e-12
            assert -2.0 <= cubeful_before_roll(chances, cube) <= 2.0


def test_a_sure_win_is_worth_one_point_or_a_gammon() -> None:
    centred, owned = MoneyCube(CubeAccess.CENTRED), MoneyCube(CubeAccess.OWNED)
    plain = bearoff_board((1,), (0, 0, 0, 0, 1))
    assert cubeful_before_roll(probabilities(plain), centred) == 1.0
    gammon = bearoff_board((1,), (0, 0, 0, 0, 0, CHECKERS))
    assert cubeful_before_roll(probabilities(gammon), owned) == 2.0
    jacoby = MoneyCube(CubeAccess.CENTRED, jacoby=True)
    assert cubeful_before_roll(probabilities(gammon), jacoby) == 1.0  # double, pass: cash


def test_after_the_roll_the_best_play_counts() -> None:
    def value(after: Board) -> float:
        return 2.0 * probabilities(after).win - 1.0

    board = bearoff_board((0, 0, 0, 0, 0, 1), (1,))
    assert equity_after_roll(board, (6, 1), value, gammons=False) == 1.0  # off at once
    assert equity_after_roll(board, (2, 1), value, gammons=False) == -1.0  # the 1-point wins
    two = bearoff_board((0, 0, 0, 1, 0, 1), (0, 1))
    expected = max(
        -value(play.result.swapped()) if sum(play.result.player) else 1.0
        for play in movegen.legal_plays(two, (4, 1))
    )
    assert equity_after_roll(two, (4, 1), value, gammons=False) == pytest.approx(expected)
    assert home_of(two.player) == (0, 0, 0, 1, 0, 1)
