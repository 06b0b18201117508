"""The rules library's bear-off figures agree with GNU Backgammon's own bear-off databases.

gnubg (Debian package ``gnubg``) evaluates bear-offs from ``gnubg_os0.bd``, its one-sided
database of 15 checkers on 6 points, stored as 16-bit fractions, which our figures must
match to about 1e-5; small positions (up to 6 checkers a side) it reads from a
two-sided database with play that maximises the chance to win outright instead, where
the one-sided method (each side minimising its expected rolls) differs by up to about
half a percent (0.0055 in this sample: an underdog gains by gambling). Its 0-ply
cubeful equity for one-sided bear-offs is Janowski's formula with cube efficiency 0.6,
as ours. gnubg runs its embedded Python on a script that writes its figures as JSON.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from typing import Any

import pytest

from services.analysis.domain.engine import Evaluator
from services.backgammon import bearoff
from services.backgammon.bearoff_eval import (
    CubeAccess,
    MoneyCube,
    cubeful_before_roll,
    probabilities,
)
from services.backgammon.board import BAR, Board
from services.backgammon.match_id import MatchIdState

ONE_SIDED_CLASS = 6  # gnubg's CLASS_BEAROFF1: the one-sided database file
TWO_SIDED_CLASS = 4  # CLASS_BEAROFF2: the built-in two-sided database (6 checkers, 6 points)
OWNERS = {-1: CubeAccess.CENTRED, 0: CubeAccess.OWNED, 1: CubeAccess.UNAVAILABLE}

GNUBG_SCRIPT = """
import json
import gnubg
gnubg.command("set jacoby on")
source, target = SOURCE, TARGET
cubeless = gnubg.evalcontext(0, 0, 0, 1, 0.0)
cubeful = gnubg.evalcontext(1, 0, 0, 1, 0.0)
out = []
for mine, theirs in json.load(open(source)):
    board = (tuple(theirs) + (0,) * 19, tuple(mine) + (0,) * 19)
    money = gnubg.cubeinfo(1, -1, 0, 0, (0, 0), 0, 0)
    row = {"class": gnubg.classifypos(board), "eval": list(gnubg.evaluate(board, money, cubeless))}
    row["cubeful"] = {
        owner: gnubg.cfevaluate(board, gnubg.cubeinfo(1, owner, 0, 0, (0, 0), 0, 0), cubeful)[0]
        for owner in (-1, 0, 1)
    }
    out.append(row)
json.dump(out, open(target, "w"))
"""

FIXED = [
    ((1,), (1,)),
    ((0, 0, 0, 0, 0, 1), (1,)),
    ((0, 0, 0, 0, 0, 15), (0, 0, 0, 0, 0, 15)),
    ((3, 3, 3, 2, 2, 2), (0, 0, 0, 3, 5, 7)),
    ((0, 1, 1, 1), (0, 0, 0, 0, 5, 10)),  # a gammon to win
    ((0, 0, 0, 0, 5, 10), (0, 1, 1, 1)),  # a gammon to save
    ((0, 0, 0, 2, 4, 8), (0, 0, 1, 2, 4, 8)),
    ((0, 0, 1, 3, 4, 5), (0, 0, 1, 2, 4, 8)),
    ((2, 2, 2, 2), (0, 0, 1, 2, 4, 8)),
]


def gnubg_binary() -> str:
    found = shutil.which("gnubg") or shutil.which("gnubg", path="/usr/games")
    if found is None:
        pytest.fail("GNU Backgammon is needed: apt-get install gnubg (installs /usr/games/gnubg)")
    return found


def random_home(rng: random.Random, checkers: int) -> tuple[int, ...]:
    counts = [0] * 6
    for _ in range(checkers):
        counts[rng.randrange(6)] += 1
    return tuple(counts)


def sample_positions() -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    rng = random.Random(2026)
    drawn = [
        (random_home(rng, rng.randint(1, 15)), random_home(rng, rng.randint(1, 15)))
        for _ in range(60)
    ]
    heavy = [(random_home(rng, rng.randint(1, 6)), random_home(rng, 15)) for _ in range(15)]
    return FIXED + drawn + heavy + [(theirs, mine) for mine, theirs in heavy]


def board_of(mine: tuple[int, ...], theirs: tuple[int, ...]) -> Board:
    pad = (0,) * (BAR + 1)
    return Board(tuple(mine) + pad[len(mine) :], tuple(theirs) + pad[len(theirs) :])


@pytest.fixture(scope="module")
def gnubg_figures(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("gnubg")
    script, source, target = folder / "eval.py", folder / "in.json", folder / "out.json"
    paths = GNUBG_SCRIPT.replace("SOURCE", repr(str(source))).replace("TARGET", repr(str(target)))
    script.write_text(paths)  # gnubg passes no arguments to the script
    padded = [
        [list(mine) + [0] * (6 - len(mine)), list(theirs) + [0] * (6 - len(theirs))]
        for mine, theirs in sample_positions()
    ]
    source.write_text(json.dumps(padded))
    run = subprocess.run(
        [gnubg_binary(), "-t", "-q", "-p", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert target.exists(), run.stdout + run.stderr
    figures: list[dict[str, Any]] = json.loads(target.read_text())
    return figures


@pytest.fixture(scope="module", autouse=True)
def whole_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cache = getattr(request.config, "cache", None)  # absent under `-p no:cacheprovider`
    folder = cache.mkdir("tavla-bearoff") if cache else tmp_path_factory.mktemp("bearoff")
    bearoff.use_database(bearoff.cached_database(folder))


def test_probabilities_agree_with_gnubg(gnubg_figures: list[dict[str, Any]]) -> None:
    worst = {ONE_SIDED_CLASS: 0.0, TWO_SIDED_CLASS: 0.0}
    gammons = 0
    for (mine, theirs), figures in zip(sample_positions(), gnubg_figures, strict=True):
        ours = probabilities(board_of(mine, theirs))
        win, win_gammon, _, lose_gammon, _, _ = figures["eval"]
        error = max(
            abs(ours.win - win),
            abs(ours.win_gammon - win_gammon),
            abs(ours.lose_gammon - lose_gammon),
        )
        worst[figures["class"]] = max(worst[figures["class"]], error)
        gammons += ours.win_gammon > 0.01 or ours.lose_gammon > 0.01
    assert worst[ONE_SIDED_CLASS] < 3e-5, worst
    assert worst[TWO_SIDED_CLASS] < 1e-2, worst
    assert gammons >= 10  # the sample exercises gammon chances, not only plain wins


def test_cubeful_money_equities_agree_with_gnubg(gnubg_figures: list[dict[str, Any]]) -> None:
    checked = 0
    for (mine, theirs), figures in zip(sample_positions(), gnubg_figures, strict=True):
        if figures["class"] != ONE_SIDED_CLASS:
            continue
        chances = probabilities(board_of(mine, theirs))
        for owner, access in OWNERS.items():
            cube = MoneyCube(access, jacoby=True)
            gnubg_equity = figures["cubeful"][str(owner)]
            assert cubeful_before_roll(chances, cube) == pytest.approx(gnubg_equity, abs=2e-4)
            checked += 1
    assert checked >= 150


def test_settlement_shares_follow_gnubg_cubeful_equity(
    gnubg_figures: list[dict[str, Any]],
) -> None:
    # The analysis service's settlement figures (the game settles every disconnection
    # by them) for exact bear-offs: the share of gnubg's cubeful equity, (1 + E/3) / 2.
    engine = Evaluator()
    state = MatchIdState(jacoby=True)
    for (mine, theirs), figures in zip(sample_positions(), gnubg_figures, strict=True):
        if figures["class"] != ONE_SIDED_CLASS:
            continue
        settled = engine.settlement(board_of(mine, theirs), state, plies=0)
        expected = (1 + figures["cubeful"]["-1"] / 3) / 2
        assert settled.exact
        assert settled.on_roll_share == pytest.approx(expected, abs=1e-4)
