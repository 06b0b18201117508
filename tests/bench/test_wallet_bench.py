"""Wallet settlement benchmark against pgbench tpcb-like on the same server (`make bench`).

Runs `tavla bench wallet` briefly through its own sub-command parser (as `tavla
bench` wires it): it starts PostgreSQL, the broker and wallet processes itself.
Asserts what must hold at any speed and makes the figure honest: the last line is
the promised JSON object, every game had its stakes held (placed and raised
through the wallet's gRPC API) before its GameEnded reached the broker, every
game of the run was settled by the service's consumer and none rejected,
pgbench ran at a scale no lower than its client count, and the ledger audit
passes afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json

import pytest

from services.wallet.bench import register_bench

GAMES = 600


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tavla bench")
    register_bench(parser.add_subparsers(dest="bench", required=True))
    return parser


async def test_wallet_bench_settles_held_games_through_the_service_and_leaves_clean_books() -> None:
    args = _parser().parse_args(
        ["wallet", "--seconds", "3", "--games", str(GAMES), "--clients", "4",
         "--players", "64", "--pgbench-scale", "4"]
    )  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # The command runs its own event loops, as it does from the terminal.
        status = await asyncio.to_thread(args.handler, args)
    lines = out.getvalue().strip().splitlines()
    print("\n" + "\n".join(lines))
    result = json.loads(lines[-1])
    assert set(result) == {
        "settlements_per_s", "pgbench_tps", "ratio", "audit", "holds", "settled", "rejected"
    }  # fmt: skip
    assert result["holds"] is True
    assert result["settled"] == GAMES  # every game of the run, settled by the wallet process
    assert result["rejected"] == 0
    assert result["audit"] == "ok"
    assert status == 0
    assert result["settlements_per_s"] > 0
    assert result["pgbench_tps"] > 0
    ratio = result["settlements_per_s"] / result["pgbench_tps"]
    assert abs(result["ratio"] - ratio) < 0.002  # both figures are printed rounded


def test_pgbench_below_the_client_count_is_refused() -> None:
    args = _parser().parse_args(["wallet", "--clients", "8", "--pgbench-scale", "4"])
    with pytest.raises(SystemExit, match="below --clients"):
        args.handler(args)
