"""Move notation is GNU Backgammon's own: our texts equal the moves `gnubg -t` lists in `hint`.

For positions from random play, gnubg (0-ply, so it is quick) lists every legal move
with its notation; the set of texts must equal ours, position by position.
"""

from __future__ import annotations

import re
import subprocess

from services.backgammon import position_id
from services.backgammon.board import Board
from services.backgammon.plays import legal_plays
from tests.integration.backgammon.test_mat_gnubg_import import gnubg_binary
from tests.unit.backgammon.bg_testdata import random_play_positions

_HINT_LINE = re.compile(r"^\s+\d+\. Cubeful \d-ply\s+(.+?)\s+Eq\.:", re.M)
_SECTION_MARK = "The dice have been set to"


def gnubg_move_texts(cases: list[tuple[Board, tuple[int, int]]]) -> list[set[str]]:
    commands = [
        "set player 0 human",
        "set player 1 human",
        "set evaluation chequerplay evaluation plies 0",
        "new game",
    ]
    for board, (d1, d2) in cases:
        commands += [f"set board {position_id.encode(board)}", f"set dice {d1} {d2}", "hint 9999"]
    run = subprocess.run(
        [gnubg_binary(), "-t", "-q"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    sections = run.stdout.split(_SECTION_MARK)[1:]
    assert len(sections) == len(cases), run.stdout[-2000:]
    return [set(_HINT_LINE.findall(section)) for section in sections]


def test_notation_matches_gnubg_hint_lists() -> None:
    cases = [(b, d) for b, d in random_play_positions(seed=11, count=600) if not b.is_over()]
    hits = bar = bear_off = 0
    for (board, dice), theirs in zip(cases, gnubg_move_texts(cases), strict=True):
        ours = {play.notation for play in legal_plays(board, dice)}
        assert ours == theirs, (position_id.encode(board), dice, sorted(ours ^ theirs))
        hits += any("*" in text for text in ours)
        bar += any(text.startswith("bar") for text in ours)
        bear_off += any("off" in text for text in ours)
    assert min(hits, bar, bear_off) >= 20, (hits, bar, bear_off)
