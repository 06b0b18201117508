"""Settlement figures for positions whose value is counted by hand on the dice.

Two bear-offs (exact figures, so every expected value below is arithmetic):

- SURE_WIN: the player on roll has one checker on the ace against one on the six:
  any roll wins a single game.
- GAMMON_RACE: fifteen on the six-point against one checker on the ace: the player
  on roll cannot win (the opponent finishes next roll) and saves the gammon only by
  bearing a checker off now: any 6 (11 rolls), 5-1 and 4-2 (4), 3-3 and 2-2 (2):
  17/36. Cubeless E = -1 - 19/36 = -55/36; no double.

The money share of the on-roll player is (1 + E/3) / 2 (the wallet's pot: 3 x cube
each side); a match share is the match-winning chance (Kazaross-XG2: 6-away against
7-away 0.56261, 5-away against 7-away 0.62638 in the table).
"""

from __future__ import annotations

import pytest

from services.analysis.config import default_cache_dir
from services.analysis.domain.engine import CubeAction, Evaluator, decide
from services.backgammon import bearoff
from services.backgammon.board import Board
from services.backgammon.match_id import MatchIdState

REST = (0,) * 19
ACE = (1, 0, 0, 0, 0, 0, *REST)
SURE_WIN = Board(ACE, (0, 0, 0, 0, 0, 1, *REST))
GAMMON_RACE = Board((0, 0, 0, 0, 0, 15, *REST), ACE)


@pytest.fixture(scope="module")
def engine() -> Evaluator:
    bearoff.use_database(bearoff.cached_database(default_cache_dir()))
    return Evaluator()


def share(engine: Evaluator, board: Board, **state: object) -> float:
    return engine.settlement(board, MatchIdState(**state), 0).on_roll_share  # type: ignore[arg-type]


def test_money_shares_follow_the_equity(engine: Evaluator) -> None:
    assert share(engine, GAMMON_RACE) == pytest.approx((1 - 55 / 108) / 2)
    assert share(engine, SURE_WIN) == pytest.approx(2 / 3)  # double, pass: E = +1


def test_rolled_dice_are_valued_by_the_best_play(engine: Evaluator) -> None:
    # 6-6 bears four off: a single loss for sure; 1-1 bears none off: a gammon.
    assert share(engine, GAMMON_RACE, dice=(6, 6)) == pytest.approx((1 - 1 / 3) / 2)
    assert share(engine, GAMMON_RACE, dice=(1, 1)) == pytest.approx((1 - 2 / 3) / 2)
    figures = engine.settlement(GAMMON_RACE, MatchIdState(dice=(1, 1)), 0)
    assert figures.basis == "the best play of the dice rolled"


def test_a_pending_resignation_binds_the_resigner_and_the_receiver_picks(engine: Evaluator) -> None:
    # The player on roll resigns (turn = 1 decides). A single: playing on (-55/36) is
    # better for the receiver than accepting (-1): refused. A gammon: -2, accepted.
    assert share(engine, GAMMON_RACE, resignation=1, turn=1) == pytest.approx((1 - 55 / 108) / 2)
    assert share(engine, GAMMON_RACE, resignation=2, turn=1) == pytest.approx((1 - 2 / 3) / 2)
    # The opponent resigns a backgammon to the player on roll (who decides): +3 accepted.
    assert share(engine, SURE_WIN, resignation=3, turn=0) == pytest.approx(1.0)
    # ... a single: worth +1, as much as playing on (double, pass).
    assert share(engine, SURE_WIN, resignation=1, turn=0) == pytest.approx(2 / 3)


def test_a_pending_double_takes_the_doubled_players_better_answer(engine: Evaluator) -> None:
    # Money: taking loses 2 cubes, passing 1: pass, E = +1.
    assert share(engine, SURE_WIN, doubled=True, turn=1) == pytest.approx(2 / 3)
    # 7-point match at 0-0: a take leaves 5-away against 7-away (0.62638), a pass 6-away
    # (0.56261): the pass is better for the doubled player.
    match = share(engine, SURE_WIN, doubled=True, turn=1, match_length=7)
    assert match == pytest.approx(0.56261)
    # Doubled in the gammon race (a blunder of a double): take, E = -110/36 for the
    # doubler, more than the pot at the current cube holds: clamped to 0.
    assert share(engine, GAMMON_RACE, doubled=True, turn=1) == pytest.approx(0.0)


def test_match_shares_are_match_winning_chances(engine: Evaluator) -> None:
    assert share(engine, SURE_WIN, match_length=7) == pytest.approx(0.56261)
    # Crawford game, 1-away against 2-away: winning ends the match.
    assert share(engine, SURE_WIN, match_length=7, score=(6, 5), crawford=True) == pytest.approx(
        1.0
    )


@pytest.mark.parametrize(
    ("no_double", "double_take", "double_pass", "action"),
    [
        (0.1, -0.2, 1.0, CubeAction.NO_DOUBLE),
        (0.5, 0.7, 1.0, CubeAction.DOUBLE_TAKE),
        (0.8, 1.4, 1.0, CubeAction.DOUBLE_PASS),
        (1.2, 1.6, 1.0, CubeAction.TOO_GOOD),
    ],
)
def test_cube_decisions(
    no_double: float, double_take: float, double_pass: float, action: CubeAction
) -> None:
    assert decide(no_double, double_take, double_pass, can_double=True)[0] is action
    assert decide(no_double, double_take, double_pass, can_double=False) == (
        CubeAction.NO_DOUBLE,
        no_double,
    )


def test_results_of_the_crawford_game_are_valued_post_crawford(engine: Evaluator) -> None:
    """5-point match, Crawford game, the player on roll 5-away (sure to win a single)
    against 1-away, offered a single: accepting or playing on both leave 4-away against
    1-away in a post-Crawford game: the table's post-Crawford row, not its Crawford one."""
    met = engine.met
    assert met.post[3] != pytest.approx(met.pre[3][0], abs=0.005)
    for resignation in ({}, {"resignation": 1, "turn": 0}):
        found = share(engine, SURE_WIN, match_length=5, score=(0, 4), crawford=True,
                      **resignation)  # fmt: skip
        assert found == pytest.approx(met.post[3])
