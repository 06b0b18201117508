"""Drive the ``gnubg`` program (GNU Backgammon 1.07, Debian package): self-play and analysis.

``self_play`` has gnubg play a match against itself (0-ply players with evaluation
noise, so there are errors to find) and export it as Jellyfish ``.mat``;
``net_match`` (from :mod:`services.analysis.samples`) plays one with the rules
library; ``gnubg_statistics`` imports a ``.mat`` file, analyses it at
0-ply (checker play, cube and luck) and reads each player's figures from ``show statistics match``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.analysis.samples import net_match

__all__ = ["GnubgPlayer", "gnubg_statistics", "net_match", "self_play"]


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
