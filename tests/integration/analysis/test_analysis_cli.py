"""``tavla analysis match`` as a subprocess: the JSON it prints, and exit status 2 with a
one-line message naming the line for a bad file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.unit.analysis.test_match_analysis import CUBE_GAME

KEYS = {
    "name", "decisions", "checker_decisions", "cube_decisions", "error_per_decision", "pr",
    "doubtful", "bad", "very_bad", "luck",
}  # fmt: skip


def tavla(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", "analysis", "match", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_good_file_prints_each_players_figures(tmp_path: Path) -> None:
    mat = tmp_path / "cube.mat"
    mat.write_text(CUBE_GAME)
    run = tavla(str(mat), "--ply", "0")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.strip().splitlines()
    assert len(lines) == 1
    alice, bob = json.loads(lines[0])["players"]
    assert set(alice) >= KEYS and set(bob) >= KEYS
    assert (alice["name"], bob["name"]) == ("alice", "bob")
    # bob: two plays, his double and his pass (he never had a cube decision otherwise)
    assert (bob["checker_decisions"], bob["cube_decisions"], bob["decisions"]) == (2, 2, 4)
    assert alice["checker_decisions"] == 2 and alice["cube_decisions"] in (2, 3)
    for player in (alice, bob):
        assert (
            player["pr"] == round(500 * player["error_per_decision"], 3)
            or abs(player["pr"] - 500 * player["error_per_decision"]) < 1e-3
        )
        assert player["doubtful"] + player["bad"] + player["very_bad"] <= player["decisions"]


def test_a_bad_file_is_exit_2_with_one_line_naming_the_line(tmp_path: Path) -> None:
    mat = tmp_path / "bad.mat"
    mat.write_text(CUBE_GAME.replace("52: 13/11 13/8", "52: 13/11 13/7"))
    run = tavla(str(mat))
    assert run.returncode == 2
    assert run.stdout == ""
    message = run.stderr.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in run.stderr
    assert "line 6:" in message and "13/11 13/7" in message


def test_a_missing_file_or_a_bad_ply_is_exit_2(tmp_path: Path) -> None:
    missing = tavla(str(tmp_path / "nowhere.mat"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert tavla(str(tmp_path / "x.mat"), "--ply", "3").returncode == 2
