"""Agreement: the wildbg counts, fast path == reference, and both == GNU Backgammon (gnubg-nn)."""

from __future__ import annotations

from collections import Counter

import gnubg_nn
import pytest

from services.backgammon import movegen
from services.backgammon.bench import (
    DOUBLES,
    EXPECTED_COUNTS,
    MIXED,
    count_set,
    default_data_dir,
    load_positions,
)
from services.backgammon.board import BAR, STARTING_BOARD, Board
from services.backgammon.plays import FAST_PATH, legal_plays, result_ids
from services.backgammon.position_id import encode
from tests.unit.backgammon.bg_testdata import (
    make_board,
    max_dice_usable,
    random_blocking_positions,
    random_play_positions,
)
from tests.unit.backgammon.reference_answers import ReferenceAnswers, answer, reference_key

ALL_ROLLS = DOUBLES + MIXED


def gnubg_results(board: Board, dice: tuple[int, int]) -> set[Board]:
    keys = gnubg_nn.moves(board.to_gnubg(), dice[0], dice[1])
    return {Board.from_gnubg(gnubg_nn.board_from_position_key(key)) for key in keys}


@pytest.fixture(scope="module")
def wildbg() -> dict[str, list[Board]]:
    folder = default_data_dir()
    return {name: load_positions(folder, name) for name in ("contact", "race")}


def test_the_c_fast_path_is_built() -> None:
    assert FAST_PATH, "services/backgammon/_fastmoves.c is not built: pip install -e ."


@pytest.mark.parametrize("key", sorted(EXPECTED_COUNTS))
def test_wildbg_play_counts_match_the_issue(wildbg: dict[str, list[Board]], key: str) -> None:
    name, kind = key.split("_")
    rolls = DOUBLES if kind == "double" else MIXED
    assert count_set(wildbg[name], rolls) == EXPECTED_COUNTS[key]


def test_fast_path_equals_reference_on_every_benchmark_position(
    wildbg: dict[str, list[Board]], request: pytest.FixtureRequest
) -> None:
    # The reference's answers are kept between runs, keyed by its sources and the inputs
    # (reference_answers.py): a case whose fast-path answer is not the kept one is judged
    # against the reference itself, and a run without kept answers judges every case so.
    cases = [(board, dice) for board in wildbg["contact"] + wildbg["race"] for dice in ALL_ROLLS]
    folder = default_data_dir()
    key = reference_key([folder / "contact.csv", folder / "race.csv"], ALL_ROLLS)
    kept = ReferenceAnswers(request.config, key, len(cases))
    answers, judged = [], 0
    for index, (board, dice) in enumerate(cases):
        fast, fast_ids = legal_plays(board, dice), result_ids(board, dice)
        if kept.known is not None and answer(fast, fast_ids) == kept.known[index]:
            answers.append(kept.known[index])
            continue
        judged += 1
        reference = movegen.legal_plays(board, dice)
        reference_ids = [encode(p.result) for p in reference]
        assert {(p.result, p.notation, p.dice_used) for p in fast} == {
            (p.result, p.notation, p.dice_used) for p in reference
        }, (encode(board), dice)
        assert len(fast) == len(reference)
        assert set(fast_ids) == set(reference_ids)
        answers.append(answer(reference, reference_ids))
    if judged:  # none kept yet, or some kept answers were not the reference's: keep them now
        kept.keep(answers)


def _kind(board: Board, dice: tuple[int, int], plays: int) -> set[str]:
    kinds = set()
    if board.player[BAR]:
        kinds.add("bar")
    if plays == 0:
        kinds.add("no play")
    elif max_dice_usable(board, dice) < (4 if dice[0] == dice[1] else 2):
        kinds.add("forced partial")
    if not any(board.player[6:]):
        kinds.add("bear-off")
    if sum(1 for n in board.opponent[:6] if n >= 2) >= 5:
        kinds.add("closed or nearly closed board")
    return kinds


def test_random_play_positions_agree_with_gnubg() -> None:
    seen: Counter[str] = Counter()
    for board, dice in random_play_positions(seed=2026, count=4000):
        ours = {p.result for p in legal_plays(board, dice)}
        assert ours == gnubg_results(board, dice), (encode(board), dice)
        assert ours == set(movegen.legal_results(board, dice))  # results only: no notation
        seen.update(_kind(board, dice, len(ours)))
    # The sample must really exercise the rules it claims to check.
    for kind in ("bar", "no play", "forced partial", "bear-off"):
        assert seen[kind] >= 50, (kind, seen)
    assert seen["closed or nearly closed board"] >= 5, seen


def test_bar_against_closed_boards_agrees_with_gnubg() -> None:
    no_play = 0
    for board in random_blocking_positions(seed=5, count=150):
        for dice in ALL_ROLLS:
            ours = {p.result for p in legal_plays(board, dice)}
            assert ours == gnubg_results(board, dice), (encode(board), dice)
            no_play += not ours
    assert no_play >= 500  # most rolls cannot enter against five or six made points


def test_higher_die_positions_agree_with_gnubg() -> None:
    one_checker_cases = [
        make_board({10: 1}, {22: 2, 1: 13}),
        make_board({10: 1}, {21: 2, 22: 2, 1: 11}),
        make_board({20: 1, 5: 1}, {17: 2, 1: 13}),
        make_board({7: 1, 3: 14}, {24: 2, 23: 2, 1: 11}),
        make_board({25: 1, 4: 3}, {1: 14}),
    ]
    for board in one_checker_cases:
        for dice in ALL_ROLLS:
            assert {p.result for p in legal_plays(board, dice)} == gnubg_results(board, dice)


def test_a_position_with_over_two_thousand_plays_agrees_with_the_reference() -> None:
    # Fifteen checkers spread over many points, opponent borne off, 2-2: 2,137 plays, which
    # makes the fast path grow its tables and copy its results through the heap.
    player = (0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 0)
    board = Board(player, (0,) * 25)
    fast = legal_plays(board, (2, 2))
    assert len(fast) == 2137
    assert {(p.result, p.notation) for p in fast} == {
        (p.result, p.notation) for p in movegen.legal_plays(board, (2, 2))
    }
    assert set(result_ids(board, (2, 2))) == {encode(p.result) for p in fast}


@pytest.mark.parametrize(
    ("player", "opponent", "dice", "message"),
    [
        ((0,) * 24, (0,) * 25, (1, 2), "25 counts"),
        ((16,) + (0,) * 24, (0,) * 25, (1, 2), "impossible count"),
        ((5, 5, 6) + (0,) * 22, (0,) * 25, (1, 2), "more than 15"),
        ((1,) + (0,) * 24, (0,) * 23 + (1, 0), (1, 2), "both players"),
        ((1,) + (0,) * 24, (0,) * 25, (0, 2), "1..6"),
    ],
)
def test_the_c_fast_path_refuses_impossible_input(
    player: tuple[int, ...], opponent: tuple[int, ...], dice: tuple[int, int], message: str
) -> None:
    from services.backgammon import _fastmoves

    with pytest.raises(ValueError, match=message):
        _fastmoves.results(player, opponent, *dice)


@pytest.mark.parametrize("dice", [(7, 1), (0, 3), (1,), (1, 2, 3), ("a", 1)])
def test_bad_dice_raise_the_domain_error_on_every_path(dice: tuple[int, ...]) -> None:
    from services.backgammon.errors import InvalidDice
    from services.backgammon.plays import count_plays

    for function in (legal_plays, result_ids, count_plays, movegen.legal_plays):
        with pytest.raises(InvalidDice):
            function(STARTING_BOARD, dice)
