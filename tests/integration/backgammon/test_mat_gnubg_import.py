"""Exported .mat files import into GNU Backgammon (Debian package `gnubg`) with the same scores.

Each case plays a random match or money session with the rules library, exports it,
imports it with `gnubg -t`, and checks that gnubg replays every move without a
warning, starts every game at the same score and ends at the same final score.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from services.backgammon.game import ActionKind, Game
from services.backgammon.match import MatchRules, new_match, record_game
from services.backgammon.matfile import MatHeader, export_match, final_score
from services.backgammon.selfplay import Odds, random_match

HEADER = MatHeader("Tavla", "alice", "bob", dt.date(2026, 11, 29), stake_minor=500, currency="EUR")


def gnubg_binary() -> str:
    found = shutil.which("gnubg") or shutil.which("gnubg", path="/usr/games")
    if found is None:
        pytest.fail("GNU Backgammon is needed: apt-get install gnubg (installs /usr/games/gnubg)")
    return found


def import_into_gnubg(text: str, folder: Path) -> tuple[str, str]:
    """gnubg's console output and its own re-export of the imported match."""
    source, back = folder / "tavla.mat", folder / "gnubg.mat"
    source.write_text(text)
    commands = f"import mat {source}\nshow score\nexport match mat {back}\n"
    run = subprocess.run(
        [gnubg_binary(), "-t", "-q"], input=commands, capture_output=True, text=True, timeout=120
    )
    assert back.exists(), run.stdout + run.stderr
    return run.stdout, back.read_text()


def starting_scores(rules: MatchRules, games: list[Game]) -> list[tuple[int, int]]:
    scores, match = [], new_match(rules)
    for game in games:
        scores.append(match.score)
        assert game.result is not None
        match = record_game(match, game.result)
    return scores


CASES = [
    ("5-point match", MatchRules(length=5), Odds()),
    ("7-point match, lively cube", MatchRules(length=7), Odds(double=0.15)),
    ("3-point match without Crawford", MatchRules(length=3, crawford=False), Odds()),
    (
        "money, Jacoby and beavers",
        MatchRules(length=0, jacoby=True, beavers=True),
        Odds(double=0.2, drop_beaver=0.0),
    ),
    ("money, cube cap 8", MatchRules(length=0, cube_cap=8), Odds(double=0.3)),
]


@pytest.mark.parametrize(("name", "rules", "odds"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gnubg_imports_the_export_and_reaches_the_same_scores(
    name: str, rules: MatchRules, odds: Odds, seed: int, tmp_path: Path
) -> None:
    games, _ = random_match(rules, random.Random(seed), max_games=6, odds=odds)
    output, reexported = import_into_gnubg(export_match(HEADER, rules, games), tmp_path)
    assert "WARNING" not in output and "Invalid" not in output, output
    theirs = [
        (int(a), int(b)) for a, b in re.findall(r"^ alice : (\d+)\s+bob : (\d+)", reexported, re.M)
    ]
    assert theirs == starting_scores(rules, games)
    final = re.search(r"The score \(after (\d+) games?\) is: alice (\d+), bob (\d+)", output)
    assert final is not None, output
    assert int(final[1]) == len(games)
    assert (int(final[2]), int(final[3])) == final_score(rules, games)


def test_the_cases_exercise_cube_actions_and_every_kind_of_ending() -> None:
    kinds: set[ActionKind] = set()
    reasons: set[str] = set()
    for _, rules, odds in CASES:
        for seed in (1, 2, 3):
            games, _ = random_match(rules, random.Random(seed), max_games=6, odds=odds)
            kinds |= {a.kind for g in games for a in g.history}
            reasons |= {g.result.reason.value for g in games if g.result is not None}
    assert {ActionKind.DOUBLE, ActionKind.TAKE, ActionKind.DROP, ActionKind.BEAVER} <= kinds
    assert {ActionKind.RESIGN, ActionKind.ACCEPT} <= kinds
    assert reasons == {"borne_off", "double_dropped", "resigned"}
