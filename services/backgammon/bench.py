"""Move-generation benchmark: this library's fast path against gnubg-nn on the wildbg positions.

One call is one position and one roll; both engines get the same calls in the same
run, alternating, best of ``rounds``, timed in process CPU time. Ours returns the
Position ID of every legal play's result; gnubg-nn's ``moves()`` returns its position
key of every result.
gnubg-nn is imported only here, by this development tool (it is GPLv3 and stays
out of the services).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.backgammon import position_id
from services.backgammon.board import Board
from services.backgammon.plays import count_plays, result_ids

DOUBLES: tuple[tuple[int, int], ...] = tuple((d, d) for d in range(1, 7))
MIXED: tuple[tuple[int, int], ...] = tuple((a, b) for a in range(1, 7) for b in range(a + 1, 7))
SETS: tuple[str, ...] = ("contact", "race")
# Counts of legal plays over the wildbg sets (a roll with no play counts 1), from the issue.
EXPECTED_COUNTS: dict[str, int] = {
    "contact_double": 218_356,
    "contact_mixed": 185_957,
    "race_double": 140_720,
    "race_mixed": 122_570,
}


def default_data_dir() -> Path:
    """``$TAVLA_WILDBG_DATA`` if set, else ``../shared/data/wildbg`` from the repository root."""
    override = os.environ.get("TAVLA_WILDBG_DATA")
    if override:
        return Path(override)
    repo_root = Path(__file__).resolve().parents[2]
    return repo_root.parent / "shared" / "data" / "wildbg"


def load_positions(data_dir: Path, name: str) -> list[Board]:
    text = (data_dir / f"{name}.csv").read_text()
    return [position_id.decode(line) for line in text.split() if line.strip()]


def count_set(boards: Sequence[Board], rolls: Sequence[tuple[int, int]]) -> int:
    return sum(max(count_plays(b, roll), 1) for b in boards for roll in rolls)


@dataclass(frozen=True, slots=True)
class Rate:
    ours: float
    gnubg: float

    @property
    def ratio(self) -> float:
        return self.ours / self.gnubg

    def as_dict(self) -> dict[str, float]:
        return {"ours": round(self.ours), "gnubg": round(self.gnubg), "ratio": round(self.ratio, 3)}


def _time_calls(function: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> float:
    # CPU time of this process: other jobs on a shared machine do not skew the ratio.
    start = time.process_time()
    for args in calls:
        function(*args)
    return len(calls) / (time.process_time() - start)


def measure(boards: Sequence[Board], rolls: Sequence[tuple[int, int]], rounds: int = 3) -> Rate:
    import gnubg_nn

    ours_calls = [(b, roll) for b in boards for roll in rolls]
    gnubg_calls = [(b.to_gnubg(), d1, d2) for b in boards for d1, d2 in rolls]
    ours = gnubg = 0.0
    for _ in range(rounds):
        ours = max(ours, _time_calls(result_ids, ours_calls))
        gnubg = max(gnubg, _time_calls(gnubg_nn.moves, gnubg_calls))
    return Rate(ours, gnubg)


def run(data_dir: Path | None = None, rounds: int = 3) -> tuple[dict[str, Rate], dict[str, int]]:
    """Rates and legal-play counts for the four sets."""
    folder = data_dir or default_data_dir()
    rates: dict[str, Rate] = {}
    counts: dict[str, int] = {}
    for name in SETS:
        boards = load_positions(folder, name)
        for kind, rolls in (("double", DOUBLES), ("mixed", MIXED)):
            key = f"{name}_{kind}"
            counts[key] = count_set(boards, rolls)
            rates[key] = measure(boards, rolls, rounds)
    return rates, counts
