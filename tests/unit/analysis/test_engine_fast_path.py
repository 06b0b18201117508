"""The money path's C fast path (``services.backgammon._fastcube``) against the Python reference.

The evaluator hands a money game outside the bear-off to one C call (classification,
the net, Janowski's cubeful equities, the cube decision). The engine's Python path
is the reference: with the extension switched off the same evaluator must give the
same figures to the last bit, on contact positions from seeded random play and on
random races, for every cube the player on roll can face, at 0 and 1 ply.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import gnubg_nn
import pytest

from services.analysis.bench import random_positions
from services.analysis.domain import _fastcube
from services.analysis.domain import engine as engine_module
from services.analysis.domain.engine import Evaluator, decode
from services.backgammon import bearoff, position_id
from services.backgammon.bearoff import OneSidedDatabase
from services.backgammon.board import Board
from services.backgammon.match_id import MatchIdState
from tests.unit.backgammon.test_bg_bearoff import complete_database

CUBES = (
    MatchIdState(),  # centred
    MatchIdState(jacoby=True),  # centred, gammons count single
    MatchIdState(cube_value=2, cube_owner=0),  # owned by the player on roll
    MatchIdState(cube_value=4, cube_owner=1),  # owned by the opponent
    MatchIdState(cube_value=16, cube_owner=0),  # doubling past it would exceed a cap of 16
)


@pytest.fixture(scope="module", autouse=True)
def _bear_off_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """The complete one-sided database from pytest's cache (the one the bear-off tests
    build and check), not a new one built on demand: the random bear-offs below reach most
    of its pip levels, which cost 27 s of CPU to compute again. Both paths read it alike."""
    bearoff.use_database(complete_database(request.config, tmp_path_factory))
    yield
    bearoff.use_database(OneSidedDatabase())


def random_race(rng: random.Random) -> Board:
    """No contact, not a bear-off: each side on its own points 1..12, one beyond its home."""

    def side() -> tuple[int, ...]:
        counts = [0] * 25
        counts[rng.randrange(6, 12)] += 1
        for _ in range(rng.randrange(0, 14)):
            counts[rng.randrange(0, 12)] += 1
        return tuple(counts)

    return Board(side(), side())


def boards() -> list[Board]:
    rng = random.Random(7)
    return random_positions(150, seed=3) + [random_race(rng) for _ in range(60)]


def reference(evaluator: Evaluator, board: Board, state: MatchIdState, plies: int) -> object:
    saved, engine_module._fast = engine_module._fast, None
    try:
        return evaluator.evaluate(board, state, plies)
    finally:
        engine_module._fast = saved


@pytest.mark.parametrize("plies", [0, 1])
def test_the_c_money_path_gives_the_python_figures_to_the_last_bit(plies: int) -> None:
    evaluator = Evaluator(cube_cap=16)
    classes = {"contact": 0, "race": 0}
    for index, board in enumerate(boards()):
        if plies and index % 5:
            continue  # 1-ply is 21 net calls a position: a sample is enough
        state = CUBES[index % len(CUBES)]
        an_board = (board.opponent, board.player)
        assert _fastcube.money(gnubg_nn.probabilities, an_board, plies, 0, False) is not None
        kind = gnubg_nn.classify(board.to_gnubg())
        classes["contact" if kind in engine_module.CONTACT_CLASSES else "race"] += 1
        fast = evaluator.evaluate(board, state, plies)
        assert repr(fast) == repr(reference(evaluator, board, state, plies)), board
    assert classes["contact"] >= 10 and classes["race"] >= 10, classes


def test_the_candidate_plays_of_a_roll_rank_as_on_the_python_path() -> None:
    # best_moves evaluates every result of a roll in one C call (money_many).
    evaluator = Evaluator(cube_cap=16)
    rng = random.Random(11)
    for index, board in enumerate(boards()[::3]):
        state = CUBES[index % len(CUBES)]
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        fast = evaluator.best_moves(board, state, dice, 0)
        saved, engine_module._fast = engine_module._fast, None
        try:
            slow = evaluator.best_moves(board, state, dice, 0)
        finally:
            engine_module._fast = saved
        assert repr(fast) == repr(slow), (board, dice)


def random_bear_off(rng: random.Random) -> Board:
    def side() -> tuple[int, ...]:
        counts = [0] * 25
        for _ in range(rng.randrange(1, 16)):
            counts[rng.randrange(0, 6)] += 1
        return tuple(counts)

    return Board(side(), side())


def test_bear_offs_take_the_exact_figures_through_the_c_cube_arithmetic() -> None:
    # The net is not called in a bear-off (money() leaves it, and a finished game, to the
    # caller); the exact one-sided chances go through exact()'s cube arithmetic.
    evaluator = Evaluator(cube_cap=16)
    rng = random.Random(2)
    finished = Board((0,) * 25, (1,) + (0,) * 24)
    for board in [random_bear_off(rng) for _ in range(80)] + [finished]:
        an_board = (board.opponent, board.player)
        assert _fastcube.money(gnubg_nn.probabilities, an_board, 0, 0, False) is None
    for index in range(80):
        board, state = random_bear_off(rng), CUBES[index % len(CUBES)]
        fast = evaluator.evaluate(board, state, 0)
        assert fast.exact
        assert repr(fast) == repr(reference(evaluator, board, state, 0)), board
        pid = position_id.encode(board)
        assert repr(evaluator.evaluate_trusted(pid, "", 0)) == repr(
            reference(evaluator, board, MatchIdState(), 0)
        )


def test_the_worker_path_from_ids_matches_the_decoded_board() -> None:
    # The C path decodes the Position ID itself (position_id.py's format).
    evaluator = Evaluator()
    rng = random.Random(5)
    for board in random_positions(60, seed=9) + [random_race(rng) for _ in range(20)]:
        pid = position_id.encode(board)
        decoded, state = decode(pid, "")
        assert decoded == board
        assert repr(evaluator.evaluate_trusted(pid, "", 0)) == repr(
            reference(evaluator, decoded, state, 0)
        )


def test_the_c_path_checks_what_it_is_given() -> None:
    board = random_positions(1, seed=1)[0]
    an_board = (board.opponent, board.player)
    with pytest.raises(ValueError, match="25 counts"):
        _fastcube.money(gnubg_nn.probabilities, (board.opponent[:24], board.player), 0, 0, False)
    with pytest.raises(ValueError, match="access"):
        _fastcube.money(gnubg_nn.probabilities, an_board, 0, 4, False)
    with pytest.raises(ValueError, match="not a valid Position ID"):
        _fastcube.money(gnubg_nn.probabilities, "4HPwATDgc/AB!A", 0, 0, False)
    with pytest.raises(ValueError, match="not a valid Position ID"):
        _fastcube.money(gnubg_nn.probabilities, "4HPwATDgc", 0, 0, False)
    with pytest.raises(ValueError, match="5 chances"):
        _fastcube.money(lambda b, p: (0.5,), an_board, 0, 0, False)


def test_the_board_handed_to_the_net_is_never_changed_under_someone_holding_it() -> None:
    # The C path refills one board object for the net while nobody else holds it.
    first, second, third = (position_id.encode(b) for b in random_positions(3, seed=4))
    kept: list[Any] = []

    def keeping_net(board: Any, plies: int) -> Any:
        kept.append(board)
        return gnubg_nn.probabilities(board, plies)

    for pid in (first, second, third):
        _fastcube.money(keeping_net, pid, 0, 0, False)
    seen = [position_id.encode(Board(tuple(b[1]), tuple(b[0]))) for b in kept]
    assert seen == [first, second, third]

    def nesting_net(board: Any, plies: int) -> Any:
        before = [list(side) for side in board]
        _fastcube.money(gnubg_nn.probabilities, third, 0, 0, False)
        assert [list(side) for side in board] == before
        return gnubg_nn.probabilities(board, plies)

    nested = _fastcube.money(nesting_net, second, 0, 0, False)
    direct = _fastcube.money(gnubg_nn.probabilities, second, 0, 0, False)
    assert repr(nested) == repr(direct)
