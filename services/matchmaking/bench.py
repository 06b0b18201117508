"""``tavla bench matchmaking``: one auto-match wave over one pool of N waiting tickets.

The pool (seeded): ratings drawn like a player population, normal around 1550
with sd 150, and a tail (one ticket in twenty from a normal of sd 400); every
ticket accepts 300 points of difference and entered the queue up to
``--waited-seconds`` ago (uniformly), so the default waiting bonus (2 points a
second, at most +300) widens each by up to 2 x that; one account per ticket,
nothing forbidden.

Timed: :func:`services.matchmaking.domain.pairing.pair_wave` on that pool, in
this process (sorting, acceptances, the recurrence, the pairs). Not timed:
drawing the pool and the reference.

The reference is the best possible mean gap for the same tickets without the
waiting bonus (each accepts exactly 300): a uniform pool, whose optimum (most
pairs, then least total gap) pairs only rating neighbours (the exchange
argument in ``pairing``'s docstring, which its unit tests check against brute
force). It is computed here by its own plain recurrence over the sorted
ratings in floating point, sharing no code with the wave. The ratio is the
wave's mean gap over that (goal: at most 1.05).

The last line printed is one JSON object::

    {"tickets", "wave_ms", "pairs", "mean_rating_gap"}

``--pairs-out FILE`` also writes the pool and the wave's pairs as JSON (ticket
fields, the bonus and ``now``), for checking them outside this code.

``--seating`` measures the seating instead (:mod:`services.matchmaking.seating_bench`):
tables seated per second over gRPC with real holds against the wallet's hold rate.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from services.matchmaking.domain.pairing import DEFAULT_BONUS, Ticket, Wave, pair_wave

if TYPE_CHECKING:
    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]

GOAL_WAVE_MS = 1000.0
GOAL_RATIO = 1.05
ACCEPTS = 300.0
MEAN, SD = 1550.0, 150.0
TAIL_SHARE, TAIL_SD = 0.05, 400.0
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Reference:
    """The no-bonus optimum: how many pairs, and their mean gap."""

    pairs: int
    mean_gap: float


def draw_pool(size: int, seed: int, waited_seconds: float) -> list[Ticket]:
    """``size`` waiting tickets of distinct accounts, drawn reproducibly from ``seed``."""
    rng = random.Random(seed)
    tickets = []
    for i in range(size):
        sd = TAIL_SD if rng.random() < TAIL_SHARE else SD
        waited = rng.uniform(0.0, waited_seconds)
        tickets.append(
            Ticket(
                ticket_id=f"ticket-{i:07d}",
                account_id=f"account-{i:07d}",
                rating=rng.gauss(MEAN, sd),
                max_rating_difference=ACCEPTS,
                entered_at=NOW - timedelta(seconds=waited),
            )
        )
    return tickets


def no_bonus_optimum(ratings: Sequence[float], accepts: float) -> Reference:
    """Most pairs, then least total gap, when every ticket accepts exactly ``accepts``.

    ``best[k]`` = (pairs, -total gap) of the first ``k`` sorted ratings: the
    last one waits, or it plays the one before it if they are within ``accepts``.
    """
    ordered = sorted(ratings)
    best: list[tuple[int, float]] = [(0, 0.0)] * (len(ordered) + 1)
    for k in range(2, len(ordered) + 1):
        best[k] = best[k - 1]
        gap = ordered[k - 1] - ordered[k - 2]
        if gap <= accepts:
            pairs, minus_gap = best[k - 2]
            best[k] = max(best[k], (pairs + 1, minus_gap - gap))
    pairs, minus_gap = best[-1]
    return Reference(pairs, -minus_gap / pairs if pairs else 0.0)


def mean_gap(wave: Wave) -> float:
    return sum(pair.gap for pair in wave.pairs) / len(wave.pairs) if wave.pairs else 0.0


def run(tickets: int, seed: int, waited_seconds: float, pairs_out: Path | None) -> dict[str, Any]:
    """Draw the pool, time one wave, print the reference and the figures; the JSON object."""
    pool = draw_pool(tickets, seed, waited_seconds)
    started, cpu_started = time.perf_counter(), time.process_time()
    wave = pair_wave(pool, NOW, bonus=DEFAULT_BONUS)
    wave_ms = (time.perf_counter() - started) * 1000.0
    cpu_ms = (time.process_time() - cpu_started) * 1000.0
    reference = no_bonus_optimum([ticket.rating for ticket in pool], ACCEPTS)
    gap = mean_gap(wave)
    print(
        f"pool: {tickets} tickets (seed {seed}), ratings N({MEAN:.0f}, {SD:.0f}) with "
        f"{TAIL_SHARE:.0%} from N({MEAN:.0f}, {TAIL_SD:.0f}), each accepting {ACCEPTS:.0f} "
        f"+ {DEFAULT_BONUS.points_per_second:g}/s waited (cap {DEFAULT_BONUS.cap:g}), "
        f"waited 0-{waited_seconds:g} s"
    )
    print(
        f"best possible without the waiting bonus (neighbour recurrence): "
        f"{reference.pairs} pairs, mean gap {reference.mean_gap:.6f}"
    )
    ratio = gap / reference.mean_gap if reference.mean_gap else float("nan")
    print(
        f"wave: {len(wave.pairs)} pairs, mean gap {gap:.6f}, ratio to the best {ratio:.4f} "
        f"(goal <= {GOAL_RATIO}); {wave_ms:.1f} ms (goal <= {GOAL_WAVE_MS:.0f}), "
        f"{cpu_ms:.1f} ms of CPU"
    )
    if pairs_out is not None:
        _write_pairs(pairs_out, pool, wave)
    return {
        "tickets": tickets,
        "wave_ms": round(wave_ms, 1),
        "pairs": len(wave.pairs),
        "mean_rating_gap": round(gap, 6),
    }


def _write_pairs(path: Path, pool: Sequence[Ticket], wave: Wave) -> None:
    document = {
        "now": NOW.isoformat(),
        "bonus": {
            "points_per_second": DEFAULT_BONUS.points_per_second,
            "cap": DEFAULT_BONUS.cap,
        },
        "tickets": [
            {
                "ticket_id": t.ticket_id,
                "account_id": t.account_id,
                "rating": t.rating,
                "max_rating_difference": t.max_rating_difference,
                "entered_at": t.entered_at.isoformat(),
            }
            for t in pool
        ],
        "pairs": [[pair.low.ticket_id, pair.high.ticket_id] for pair in wave.pairs],
    }
    path.write_text(json.dumps(document))


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError("must be a number of seconds, 0 or more")
    return value


def _handle(args: argparse.Namespace) -> int:
    if args.seating:
        from services.matchmaking import seating_bench  # starts processes: only when asked

        print(json.dumps(seating_bench.run(args.tables, args.clients)))
        return 0
    result = run(args.tickets, args.seed, args.waited_seconds, args.pairs_out)
    print(json.dumps(result))
    return 0


def register_bench(bench_subparsers: SubParsers) -> None:
    """Add ``matchmaking`` to the ``tavla bench`` command."""
    parser = bench_subparsers.add_parser(
        "matchmaking", help="one auto-match wave over one pool of N waiting tickets"
    )
    parser.add_argument("--tickets", type=_count, default=100_000, help="tickets (default 100000)")
    parser.add_argument("--seed", type=int, default=1, help="the pool's seed (default 1)")
    parser.add_argument(
        "--waited-seconds",
        type=_seconds,
        default=60.0,
        help="tickets entered up to this long ago (default 60)",
    )
    parser.add_argument("--pairs-out", type=Path, help="write the pool and the pairs here (JSON)")
    parser.add_argument(
        "--seating",
        action="store_true",
        help="instead: tables seated per second over gRPC with real holds (real wallet, game, "
        "geo and matchmaking processes) against the wallet's hold rate alone",
    )
    parser.add_argument("--tables", type=_count, default=200, help="--seating: tables (200)")
    parser.add_argument(
        "--clients", type=_count, default=8, help="--seating: concurrent callers (8)"
    )
    parser.set_defaults(handler=_handle)


__all__ = ["draw_pool", "no_bonus_optimum", "register_bench", "run"]
