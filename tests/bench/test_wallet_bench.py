"""Wallet settlement benchmark against pgbench tpcb-like on the same server (`make bench`).

Runs `tavla bench wallet` briefly through its own sub-command parser (as `tavla
bench` wires it) on a PostgreSQL it starts itself, and prints its figures. Asserts
what must hold at any speed: settlements happened, pgbench ran, the last line is
the promised JSON object, and the ledger audit passes afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json

from services.wallet.bench import register_bench


async def test_wallet_bench_prints_figures_and_leaves_clean_books() -> None:
    parser = argparse.ArgumentParser(prog="tavla bench")
    register_bench(parser.add_subparsers(dest="bench", required=True))
    args = parser.parse_args(["wallet", "--seconds", "4", "--pgbench-scale", "4"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # The command runs its own event loops, as it does from the terminal.
        status = await asyncio.to_thread(args.handler, args)
    lines = out.getvalue().strip().splitlines()
    print("\n" + "\n".join(lines))
    result = json.loads(lines[-1])
    assert set(result) == {"settlements_per_s", "pgbench_tps", "ratio", "audit"}
    assert result["audit"] == "ok"
    assert status == 0
    assert result["settlements_per_s"] > 0
    assert result["pgbench_tps"] > 0
    ratio = result["settlements_per_s"] / result["pgbench_tps"]
    assert abs(result["ratio"] - ratio) < 0.002  # both figures are printed rounded
