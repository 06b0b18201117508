"""``tavla bench matchmaking`` as a user runs it: the JSON it promises, and only admissible pairs.

Timing is not asserted (the machine is shared). The pairs the wave made are read
back from ``--pairs-out`` and checked here from the raw ticket fields; the
bench's no-bonus reference is checked against brute force.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.matchmaking.bench import no_bonus_optimum
from services.matchmaking.domain.pairing import Ticket
from tests.unit.matchmaking.pairing_oracle import optimum

REPO = Path(__file__).resolve().parents[3]
TICKETS = 2000


def tavla(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli", *arguments],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_bench_prints_its_figures_and_pairs_only_admissible_tickets(tmp_path: Path) -> None:
    out = tmp_path / "pairs.json"
    done = tavla("bench", "matchmaking", "--tickets", str(TICKETS), "--pairs-out", str(out))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    assert set(result) == {"tickets", "wave_ms", "pairs", "mean_rating_gap"}
    assert result["tickets"] == TICKETS
    assert isinstance(result["wave_ms"], float) and result["wave_ms"] > 0
    assert any(line.startswith("best possible without the waiting bonus") for line in lines)

    document = json.loads(out.read_text())
    now = datetime.fromisoformat(document["now"])
    per_second, cap = document["bonus"]["points_per_second"], document["bonus"]["cap"]
    tickets = {t["ticket_id"]: t for t in document["tickets"]}
    assert len(tickets) == TICKETS

    def accepts(t: dict[str, Any]) -> float:
        waited = (now - datetime.fromisoformat(t["entered_at"])).total_seconds()
        return float(t["max_rating_difference"]) + min(cap, per_second * max(0.0, waited))

    pairs = document["pairs"]
    assert len(pairs) == result["pairs"]
    seated = [ticket_id for pair in pairs for ticket_id in pair]
    assert len(seated) == len(set(seated))  # nobody twice
    gaps = []
    for low_id, high_id in pairs:
        low, high = tickets[low_id], tickets[high_id]
        gap = high["rating"] - low["rating"]
        assert 0 <= gap <= min(accepts(low), accepts(high))
        assert low["account_id"] != high["account_id"]
        gaps.append(gap)
    assert abs(sum(gaps) / len(gaps) - result["mean_rating_gap"]) < 1e-6
    # The pool is dense: everyone is seated (an even count), as the reference also finds.
    assert result["pairs"] == TICKETS // 2


def test_bad_arguments_are_refused_with_a_reason() -> None:
    done = tavla("bench", "matchmaking", "--tickets", "-5")
    assert done.returncode == 2
    assert "must be 0 or more" in done.stderr


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(2800, 3400).map(lambda r: r / 2), max_size=11), st.integers(0, 400))
def test_the_bench_reference_is_the_brute_force_optimum(ratings: list[float], accepts: int) -> None:
    now = datetime.fromisoformat("2026-12-01T12:00:00+00:00")
    tickets = [Ticket(f"t{i}", f"a{i}", r, float(accepts), now) for i, r in enumerate(ratings)]
    pairs, minus_gap = optimum(tickets, now, 0.0, 0.0)
    reference = no_bonus_optimum(ratings, float(accepts))
    assert reference.pairs == pairs
    assert reference.mean_gap == (-minus_gap / pairs if pairs else 0.0)
