"""``tavla bench matchmaking`` as a user runs it: the JSON it promises, and only admissible pairs.

Timing is not asserted (the machine is shared). The pairs the wave made are read
back from ``--pairs-out`` and checked here from the raw ticket fields, and the
mean gap against the issue's goal (within 5% of the printed optimum). The
bench's no-bonus reference is checked against brute force on small pools, and
the wave against that reference on a uniform pool of 3,001 too large for it.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.matchmaking.bench import no_bonus_optimum
from services.matchmaking.domain.pairing import NO_BONUS, Ticket, pair_wave
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
    best = re.search(r"best possible without .*: (\d+) pairs, mean gap ([0-9.]+)", done.stdout)
    assert best is not None
    assert result["mean_rating_gap"] <= 1.05 * float(best.group(2))  # the quality goal

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


def test_a_large_uniform_wave_matches_the_bench_reference() -> None:
    """At a size brute force cannot reach: the wave against the bench's own recurrence."""
    now = datetime.fromisoformat("2026-12-01T12:00:00+00:00")
    rng = random.Random(7)
    ratings = [round(rng.gauss(1550, 150), 2) for _ in range(3001)]
    tickets = [Ticket(f"t{i}", f"a{i}", r, 3.0, now) for i, r in enumerate(ratings)]
    wave = pair_wave(tickets, now, bonus=NO_BONUS)
    reference = no_bonus_optimum(ratings, 3.0)
    assert len(wave.pairs) == reference.pairs
    assert abs(sum(pair.gap for pair in wave.pairs) / reference.pairs - reference.mean_gap) < 1e-9


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(2800, 3400).map(lambda r: r / 2), max_size=11), st.integers(0, 400))
def test_the_bench_reference_is_the_brute_force_optimum(ratings: list[float], accepts: int) -> None:
    now = datetime.fromisoformat("2026-12-01T12:00:00+00:00")
    tickets = [Ticket(f"t{i}", f"a{i}", r, float(accepts), now) for i, r in enumerate(ratings)]
    pairs, minus_gap = optimum(tickets, now, 0.0, 0.0)
    reference = no_bonus_optimum(ratings, float(accepts))
    assert reference.pairs == pairs
    assert reference.mean_gap == (-minus_gap / pairs if pairs else 0.0)
