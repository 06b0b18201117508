"""The server's turn path: plain-tuple plays and the chosen play agree with the library's own."""

from __future__ import annotations

import random

import pytest

from services.backgammon import movegen
from services.backgammon.errors import IllegalPlay, InvalidNotation, RulesError
from services.backgammon.plays import chosen_play, legal_plays, turn_options
from tests.unit.backgammon.bg_testdata import random_play_positions

POSITIONS = random_play_positions(seed=21, count=600)


def test_turn_options_are_the_legal_plays_in_their_order() -> None:
    for board, dice in POSITIONS:
        expected = [(p.result.player, p.result.opponent, p.steps, p.notation)
                    for p in legal_plays(board, dice)]  # fmt: skip
        assert list(turn_options(board, dice)) == expected


def test_the_chosen_play_is_the_one_find_play_finds() -> None:
    rng = random.Random(4)
    chosen = 0
    for board, dice in POSITIONS:
        plays = legal_plays(board, dice)
        if not plays:
            continue
        # A play spelled by its steps, as a client may write it, finds that very play.
        pick = rng.choice(plays)
        text = " ".join(f"{_point(a)}/{_point(b)}" for a, b in pick.steps)
        assert chosen_play(board, dice, text) == movegen.find_play(board, dice, text, plays)
        assert chosen_play(board, dice, text) == pick
        chosen += 1
    assert chosen > 400


def _point(point: int) -> str:
    return {25: "bar", 0: "off"}.get(point, str(point))


def _refusal(call: object) -> tuple[type[BaseException], str]:
    assert callable(call)
    with pytest.raises(RulesError) as caught:
        call()
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize("text", ["24/1", "13/12 13/12 13/12 13/12 13/12", "25/20", "nonsense", ""])
def test_a_refused_play_gets_find_plays_refusal(text: str) -> None:
    refused = 0
    for board, dice in POSITIONS[:200]:
        plays = legal_plays(board, dice)
        if not plays:
            continue
        try:
            expected = movegen.find_play(board, dice, text, plays)
        except (IllegalPlay, InvalidNotation):
            expected = None
        if expected is not None:
            assert chosen_play(board, dice, text) == expected
            continue
        ours = _refusal(lambda: chosen_play(board, dice, text))  # noqa: B023
        theirs = _refusal(lambda: movegen.find_play(board, dice, text, plays))  # noqa: B023
        assert ours == theirs
        refused += 1
    assert refused > 50
