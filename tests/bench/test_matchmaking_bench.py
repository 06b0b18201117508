"""Auto-match benchmark (`make bench`): one wave over 100,000 waiting tickets, and the
seating throughput (`--seating`, 60 tables) against the wallet's hold rate.

Runs `tavla bench matchmaking` through its own sub-command parser, in this
process, and prints its figures with their goals (wave_ms <= 1000, mean gap
within 5% of the no-bonus optimum). Asserts what must hold at any speed: the
promised JSON keys, everyone seated in this dense pool, and the mean gap
within 5% of the optimum the bench prints; the time is printed, not asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re

from services.matchmaking import bench

TICKETS = 100_000


def test_one_wave_over_a_hundred_thousand_tickets() -> None:
    parser = argparse.ArgumentParser(prog="tavla bench")
    bench.register_bench(parser.add_subparsers(dest="bench", required=True))
    args = parser.parse_args(["matchmaking", "--tickets", str(TICKETS)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = args.handler(args)
    lines = out.getvalue().strip().splitlines()
    print("\n" + "\n".join(lines))
    result = json.loads(lines[-1])
    assert status == 0
    assert set(result) == {"tickets", "wave_ms", "pairs", "mean_rating_gap"}
    assert result["pairs"] == TICKETS // 2
    best = re.search(r"best possible .*: (\d+) pairs, mean gap ([0-9.]+)", out.getvalue())
    assert best is not None
    ratio = result["mean_rating_gap"] / float(best.group(2))
    print(
        f"matchmaking wave: {result['wave_ms']} ms ({result['wave_ms'] / bench.GOAL_WAVE_MS:.2f}x "
        f"the bound of {bench.GOAL_WAVE_MS:.0f} ms), mean gap {ratio:.4f}x the optimum "
        f"(goal <= {bench.GOAL_RATIO})"
    )
    assert ratio <= bench.GOAL_RATIO


def test_seating_throughput_against_the_wallets_hold_rate() -> None:
    """`--seating` on a small run: real processes, every table started (the bench raises
    otherwise), both rates printed; the rates themselves are not asserted."""
    parser = argparse.ArgumentParser(prog="tavla bench")
    bench.register_bench(parser.add_subparsers(dest="bench", required=True))
    args = parser.parse_args(["matchmaking", "--seating", "--tables", "60", "--clients", "6"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = args.handler(args)
    lines = out.getvalue().strip().splitlines()
    print("\n" + "\n".join(lines))
    result = json.loads(lines[-1])
    assert status == 0
    assert set(result) == {"tables", "seated_per_s", "holds_per_s", "ratio"}
    assert result["tables"] == 60 and result["seated_per_s"] > 0 and result["holds_per_s"] > 0
