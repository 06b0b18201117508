"""Drive the ``gnubg`` program (GNU Backgammon 1.07, Debian package): self-play and analysis.

``self_play`` has gnubg play a match against itself (0-ply players with evaluation
noise, so there are errors to find) and export it as Jellyfish ``.mat``;
``net_match`` plays one with the rules library (the game service's engine), plays
near the net's best; ``gnubg_statistics`` imports a ``.mat`` file, analyses it at
0-ply (checker play, cube and luck) and reads each player's figures from ``show statistics match``.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import gnubg_nn
import pytest

from services.backgammon import game as games
from services.backgammon.cube import may_double
from services.backgammon.game import Game, Phase
from services.backgammon.match import MatchRules, new_match, record_game
from services.backgammon.plays import Play
from services.backgammon.selfplay import Odds


def gnubg_binary() -> str:
    found = shutil.which("gnubg") or shutil.which("gnubg", path="/usr/games")
    if found is None:
        pytest.fail("GNU Backgammon is needed: apt-get install gnubg (installs /usr/games/gnubg)")
    return found


def run_gnubg(commands: str) -> str:
    run = subprocess.run(
        [gnubg_binary(), "-t", "-q"], input=commands, capture_output=True, text=True, timeout=300
    )
    return run.stdout + run.stderr


def self_play(length: int, seed: int, folder: Path, noise: tuple[float, float]) -> Path:
    """A match gnubg plays against itself, exported as .mat."""
    target = folder / f"gnubg-{length}-{seed}.mat"
    lines = [f"set seed {seed}", "set player 0 gnubg", "set player 1 gnubg"]
    for player, amount in enumerate(noise):
        lines += [
            f"set player {player} chequerplay evaluation plies 0",
            f"set player {player} chequerplay evaluation noise {amount}",
            f"set player {player} chequerplay evaluation deterministic on",
            f"set player {player} cubedecision evaluation plies 0",
            f"set player {player} cubedecision evaluation noise {amount}",
        ]
    lines += [f"new match {length}", f"export match mat {target}"]
    output = run_gnubg("\n".join(lines) + "\n")
    assert target.exists(), output[-2000:]
    return target


@dataclass(frozen=True)
class GnubgPlayer:
    unforced_moves: int
    close_cube_decisions: int
    checker_error: float  # EMG, positive
    cube_error: float
    total_error: float
    luck: float

    @property
    def decisions(self) -> int:
        return self.unforced_moves + self.close_cube_decisions

    @property
    def error_per_decision(self) -> float:
        return self.total_error / self.decisions


def _pair(section: str, label: str) -> tuple[str, str]:
    # "Error total EMG (MWC)" in a match, "(Points)" in money: the first figure of a
    # column is EMG, the one in brackets the same in MWC or points.
    unit = r"(?:\s+\((?:MWC|Points)\))?"
    figure = r"\s+(\S+)(?:\s+\([^)]*\))?"
    found = re.search(rf"^{re.escape(label)}{unit}{figure}{figure}", section, re.M)
    assert found is not None, f"{label!r} not in gnubg's statistics:\n{section}"
    return found[1], found[2]


def gnubg_statistics(mat: Path, *, jacoby: bool = False) -> tuple[GnubgPlayer, GnubgPlayer]:
    """gnubg's 0-ply analysis of ``mat``: each player's figures (left column first).
    gnubg does not read the file's Jacoby tag: it is set as the file says."""
    commands = (
        f"set jacoby {'on' if jacoby else 'off'}\n"
        "set analysis chequerplay evaluation plies 0\n"
        "set analysis cubedecision evaluation plies 0\n"
        "set analysis luckanalysis plies 0\n"
        f"import mat {mat}\nanalyse match\nshow statistics match\n"
    )
    output = run_gnubg(commands)
    assert "Chequerplay statistics" in output, output[-3000:]
    checker = output[output.index("Chequerplay statistics") : output.index("Luck statistics")]
    luck = output[output.index("Luck statistics") : output.index("Cube statistics")]
    cube = output[output.index("Cube statistics") : output.index("Overall statistics")]
    overall = output[output.index("Overall statistics") :]
    columns = []
    for side in (0, 1):
        columns.append(
            GnubgPlayer(
                unforced_moves=int(_pair(checker, "Unforced moves")[side]),
                close_cube_decisions=int(_pair(cube, "Close or actual cube decisions")[side]),
                checker_error=-float(_pair(checker, "Error total EMG")[side]),
                cube_error=-float(_pair(cube, "Error total EMG")[side]),
                total_error=-float(_pair(overall, "Error total EMG")[side]),
                luck=float(_pair(luck, "Luck total EMG")[side]),
            )
        )
    return columns[0], columns[1]


def _net_play(game: Game, rng: random.Random) -> Play | str:
    """The net's 0-ply cubeless favourite 3 times in 4, else one of its next three."""
    options = games.plays(game)
    if not options:
        return ""

    def equity(play: Play) -> float:
        if not sum(play.result.player):
            return 3.0
        win, wg, wbg, lg, lbg = gnubg_nn.probabilities(play.result.swapped().to_gnubg(), 0)
        return -(2 * win - 1 + wg - lg + wbg - lbg)

    ranked = sorted(options, key=equity, reverse=True)
    return ranked[0] if rng.random() < 0.75 else rng.choice(ranked[1:4] or ranked)


def net_match(rules: MatchRules, rng: random.Random, max_games: int = 3) -> list[Game]:
    """A match (or money session) of the rules library, plays chosen near the net's best
    and cube actions at random (as a player of the site might): what the game service
    records and exports."""
    score = new_match(rules)
    played: list[Game] = []
    odds = Odds(double=0.08, resign=0.0, drop=0.3, beaver=0.0)
    while not score.is_over and len(played) < max_games:
        while True:
            die0, die1 = rng.randint(1, 6), rng.randint(1, 6)
            if die0 != die1:
                break
        game = games.start_game(score.cube_rules(), die0, die1)
        while game.phase is not Phase.OVER:
            if game.phase is Phase.MOVE:
                game = games.play(game, _net_play(game, rng))
            elif game.phase is Phase.ROLL:
                if rng.random() < odds.double and may_double(game.cube, game.turn, game.rules):
                    game = games.double(game)
                else:
                    game = games.roll(game, (rng.randint(1, 6), rng.randint(1, 6)))
            else:
                game = games.drop(game) if rng.random() < odds.drop else games.take(game)
        assert game.result is not None
        played.append(game)
        score = record_game(score, game.result)
    return played
