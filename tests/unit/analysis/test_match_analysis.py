"""Match analysis rules, derived by hand: what is a decision, what is counted, the sums.

The equities themselves are checked against the gnubg program in
tests/integration/analysis/test_match_gnubg.py; here: which decisions exist and are
counted (gnubg's rules, see services/analysis/domain/match_analysis.py), PR and
tiers as arithmetic on given errors, Crawford flags, and errors naming the line.
"""

from __future__ import annotations

import pytest

from services.analysis.domain.engine import Evaluator
from services.analysis.domain.match_analysis import (
    Decision,
    analyse,
    crawford_games,
    summarise,
)
from services.analysis.domain.match_cube import Score
from services.analysis.domain.matread import MatFileError, parse
from services.analysis.domain.met import kazaross_xg2
from services.backgammon.board import STARTING_BOARD
from services.backgammon.match_id import MatchIdState

CUBE_GAME = """ 5 point match

 Game 1
 alice : 0                      bob : 0
  1) 31: 8/5 6/5                  Doubles => 2
  2)  Takes                       52: 13/11 13/8
  3) 64: 13/7 13/9                43: 13/10 13/9
  4)  Doubles => 4                Drops
      Wins 2 points
"""


@pytest.fixture(scope="module")
def engine() -> Evaluator:
    return Evaluator()


def test_which_decisions_exist_and_which_always_count(engine: Evaluator) -> None:
    decisions = analyse(parse(CUBE_GAME), engine)
    # alice's opening 31 has no cube decision before it; bob's double is his cube
    # decision (no "no_double" as well); after alice's take bob rolls with no second
    # cube decision; alice owns the cube at 2 and rolls: a no_double decision; bob may
    # not double (alice owns the cube): none for him; alice redoubles, bob drops.
    assert [(d.player, d.kind, d.line) for d in decisions] == [
        (0, "checker", 5),
        (1, "double", 5),
        (0, "take", 6),
        (1, "checker", 6),
        (0, "no_double", 7),
        (0, "checker", 7),
        (1, "checker", 7),
        (0, "double", 8),
        (1, "pass", 8),
    ]
    by_kind = {d.kind: d for d in decisions if d.kind in ("double", "take", "pass")}
    assert all(d.counted for d in by_kind.values())  # actual cube actions always count
    assert all(d.counted for d in decisions if d.kind == "checker")  # none of these is forced
    assert [d.cube for d in decisions if d.kind == "checker"] == [1, 2, 2, 2]
    assert all(d.error >= 0 for d in decisions)


def test_figures_are_sums_over_counted_decisions_only() -> None:
    decisions = [
        Decision(1, 1, 0, "checker", True, 0.02, luck=0.5),
        Decision(1, 2, 0, "checker", True, 0.05, luck=-0.25),
        Decision(1, 3, 0, "checker", False, 0.0, luck=0.125),  # forced: luck still counts
        Decision(1, 4, 0, "no_double", False, 0.0),  # not close: not a decision
        Decision(1, 5, 0, "double", True, 0.08),
        Decision(1, 6, 0, "checker", True, 0.16),
        Decision(1, 7, 1, "take", True, 0.1599),
        Decision(1, 8, 1, "checker", True, 0.0399),
    ]
    alice, bob = summarise(("alice", "bob"), decisions)
    assert (alice.decisions, alice.checker_decisions, alice.cube_decisions) == (4, 3, 1)
    assert alice.checker_error == pytest.approx(0.23)
    assert alice.cube_error == pytest.approx(0.08)
    assert alice.error_per_decision == pytest.approx(0.31 / 4)
    assert alice.pr == pytest.approx(500 * 0.31 / 4)  # 38.75
    assert alice.checker_error_per_decision == pytest.approx(0.23 / 3)
    # Tiers are exclusive: 0.05 doubtful, 0.08 bad, 0.16 very bad; 0.02 none.
    assert (alice.doubtful, alice.bad, alice.very_bad) == (1, 1, 1)
    assert alice.luck == pytest.approx(0.375)
    # 0.1599 is bad, not very bad; 0.0399 is below doubtful.
    assert (bob.doubtful, bob.bad, bob.very_bad) == (0, 1, 0)
    assert bob.as_json()["pr"] == pytest.approx(500 * 0.1998 / 2)


def test_crawford_game_is_the_first_game_with_a_side_one_away() -> None:
    text = """; [Crawford "On"]
 3 point match
 Game 1
 a : 0   b : 0
 Game 2
 a : 2   b : 0
 Game 3
 a : 2   b : 1
"""
    assert crawford_games(parse(text)) == [False, True, False]
    assert crawford_games(parse(text.replace('"On"', '"Off"'))) == [False, False, False]


def test_results_of_the_crawford_game_are_valued_post_crawford() -> None:
    """1-away (Crawford game) against 3-away: losing a single leaves 1-away against
    2-away post-Crawford (the table's post-Crawford row), a gammon 1-away all (0.5)."""
    met = kazaross_xg2()
    score = Score(away=1, opponent_away=3, crawford=True, post_crawford=False)
    assert score.mwc(met, 0, 1) == pytest.approx(1.0 - met.post[1])
    assert score.mwc(met, 0, 2) == pytest.approx(0.5)
    assert score.mwc(met, 0, 1) != pytest.approx(met.pre[0][1])


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("  2)  Takes                       52: 13/11 13/8", "alice takes out of turn"),
        ("  2)                             52: 13/11 13/7", "not a legal play"),
        ("  2)                             66:", "no play written"),
        ("  2) 52: 13/11 13/8", "alice moves out of turn: b was to double or move"),
        ("  2)  Doubles => 2", "out of turn"),
    ],
)
def test_a_file_that_cannot_be_played_names_the_line(
    engine: Evaluator, row: str, message: str
) -> None:
    text = " 5 point match\n\n Game 1\n alice : 0   b : 0\n  1) 31: 8/5 6/5\n" + row + "\n"
    with pytest.raises(MatFileError) as error:
        analyse(parse(text), engine)
    assert error.value.line == 6
    assert message in str(error.value)


RANKED_GAME = """ 5 point match

 Game 1
 alice : 0                      bob : 0
  1) 31: 8/5 6/5                  31: 6/3 6/5
"""


def test_a_checker_play_carries_its_rank_and_the_second_and_third_plays_losses(
    engine: Evaluator,
) -> None:
    """The opening 31: making the 5-point (8/5 6/5) is the best play by common consent
    and no other play comes near it; 6/5 6/3 (two blots in the home board, nothing made)
    is a poor one. The rank is the play's place in the engine's ranking of the distinct
    legal plays; the second- and third-best plays' losses are where the nearest
    alternatives stood."""
    alice, bob = [d for d in analyse(parse(RANKED_GAME), engine) if d.kind == "checker"]
    assert (alice.played, alice.rank, alice.error) == ("8/5 6/5", 1, 0.0)
    assert alice.second_loss is not None and alice.third_loss is not None
    assert 0.04 < alice.second_loss <= alice.third_loss  # nothing else comes near it
    # bob's poor play: its rank is 1 + the plays that lose less than it does; the second-
    # and third-best plays lose no more than it.
    assert bob.second_loss is not None and bob.third_loss is not None
    assert bob.rank >= 3 and bob.second_loss <= bob.third_loss <= bob.error
    # alice moved first from the starting position: her figures are the engine's ranking's.
    ranked = engine.best_moves(STARTING_BOARD, MatchIdState(
        cube_value=1, cube_owner=None, on_roll=0, turn=0, crawford=False, match_length=5,
        score=(0, 0), jacoby=False), (3, 1))
    assert ranked[0].notation == "8/5 6/5"
    assert (alice.second_loss, alice.third_loss) == pytest.approx(
        (ranked[1].equity_loss, ranked[2].equity_loss))


def test_cube_decisions_have_no_rank(engine: Evaluator) -> None:
    decisions = analyse(parse(CUBE_GAME), engine)
    cube = [d for d in decisions if d.kind != "checker"]
    assert cube and all((d.rank, d.second_loss, d.third_loss) == (0, None, None) for d in cube)
    assert all(d.rank >= 1 for d in decisions if d.kind == "checker")


def test_the_published_decision_carries_the_rank_and_losses_of_checker_plays_only(
    engine: Evaluator,
) -> None:
    from services.analysis.matches import player_message

    decisions = analyse(parse(RANKED_GAME), engine)
    figures = summarise(("alice", "bob"), decisions)
    bob = player_message(figures[1], "b", [(d, None) for d in decisions if d.player == 1])
    no_double, checker = bob.decision_list
    assert no_double.kind == "no_double"
    assert not any(no_double.HasField(f) for f in ("rank", "second_loss", "third_loss"))
    played = decisions[2]
    assert (checker.rank, checker.second_loss, checker.third_loss) == (
        played.rank, played.second_loss, played.third_loss)
