"""Match analysis against GNU Backgammon itself (the ``gnubg`` program, 1.07), both at 0-ply.

The same .mat file goes through ``tavla analysis match`` (as a subprocess, the shipped
command) and through gnubg's ``analyse match`` / ``show statistics match``. Compared,
like for like, per player:

- the counted decisions: gnubg's "Unforced moves" and "Close or actual cube decisions"
  against ``checker_decisions`` and ``cube_decisions`` (the same definitions, see
  services/analysis/domain/match_analysis.py): equal, a cube decision either side of
  gnubg's 0.16 "close" line excepted;
- error per decision: gnubg's overall "Error total EMG" (normalised equity, the
  figure its "Error rate mEMG" divides by those decisions) over its decisions, against
  ``error_per_decision``: within 10% relative.

Files: matches gnubg plays against itself (0-ply players with evaluation noise, so
there are errors to find), and matches the game service exports (the rules library's
exporter, the game service's GetMatchRecord text) of matches the rules library plays
near the net's best with random cube actions: a 5-point match and a money session
with Jacoby (gnubg is told the file's Jacoby rule).

and a 5-point match of random legal actions (odd positions, odd cube actions).
gnubg's self-play match of seed 3 plays a Crawford game: valuing its results with the
pre-Crawford table (the bug this test found) put that player 32% off. Measured over
24 files at the commit adding this test: within 5.2%.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.analysis.domain.match_analysis import crawford_games
from services.analysis.domain.matread import parse
from services.backgammon.match import MatchRules
from services.backgammon.matfile import MatHeader, export_match
from services.backgammon.selfplay import Odds, random_match
from tests.integration.analysis.gnubg_stats import (
    GnubgPlayer,
    gnubg_statistics,
    net_match,
    self_play,
)

HEADER = MatHeader("Tavla", "alice", "bob", dt.date(2026, 12, 1), stake_minor=500, currency="EUR")
RELATIVE = 0.10


def ours(mat: Path) -> list[dict[str, Any]]:
    run = subprocess.run(
        [sys.executable, "-m", "services.cli", "analysis", "match", str(mat), "--ply", "0"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    players: list[dict[str, Any]] = json.loads(run.stdout)["players"]
    return players


def compare(mat: Path, jacoby: bool = False) -> None:
    theirs = gnubg_statistics(mat, jacoby=jacoby)
    mine = ours(mat)
    for gnubg, player in zip(theirs, mine, strict=True):
        assert player["checker_decisions"] == gnubg.unforced_moves, (mat.name, player)
        assert abs(player["cube_decisions"] - gnubg.close_cube_decisions) <= 1, (mat.name, player)
        assert player["decisions"] > 0
        relative = player["error_per_decision"] / gnubg.error_per_decision - 1.0
        assert abs(relative) <= RELATIVE, (mat.name, player, _figures(gnubg))


def _figures(gnubg: GnubgPlayer) -> dict[str, float]:
    return {"gnubg_error_per_decision": gnubg.error_per_decision, "decisions": gnubg.decisions}


@pytest.mark.parametrize("seed", [3, 4])
def test_matches_gnubg_plays_against_itself(seed: int, tmp_path: Path) -> None:
    compare(self_play(3, seed, tmp_path, noise=(0.05, 0.03)))


@pytest.mark.parametrize(
    ("rules", "seed"),
    [(MatchRules(length=5), 1), (MatchRules(length=0, jacoby=True), 2)],
    ids=["5-point match", "money session with Jacoby"],
)
def test_matches_the_game_service_exports(rules: MatchRules, seed: int, tmp_path: Path) -> None:
    games = net_match(rules, random.Random(seed))
    mat = tmp_path / "tavla.mat"
    mat.write_text(export_match(HEADER, rules, games))
    compare(mat, jacoby=rules.jacoby)


def test_a_random_play_match(tmp_path: Path) -> None:
    rules = MatchRules(length=5)
    games, _ = random_match(rules, random.Random(1), max_games=6, odds=Odds(double=0.1))
    mat = tmp_path / "random.mat"
    mat.write_text(export_match(HEADER, rules, games))
    assert any(crawford_games(parse(mat.read_text())))  # a Crawford game is played
    compare(mat)
