"""``tavla bench analysis`` (`make bench`): rates in process and over gRPC, against gnubg-nn.

Runs the command through its own sub-command parser, as ``tavla bench`` wires it, with
few positions and a short gRPC window. Asserts what makes the figures honest at any
speed: the ratio is the one printed (in-process over gnubg-nn on the same positions),
the served process answered every call, the summary has the issue's four keys, and
the 7-point match was analysed whole (its figure is a time, over a match of several
games and hundreds of decisions). The goals (ratio >= 0.8, match_7pt_s < 1) are
printed, not asserted: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json

from services.analysis.bench import register_bench


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tavla bench")
    register_bench(parser.add_subparsers(dest="bench", required=True))
    return parser


async def test_analysis_bench_measures_in_process_and_grpc_rates_honestly() -> None:
    args = _parser().parse_args(
        [
            "analysis",
            "--positions",
            "400",
            "--passes",
            "2",
            "--seconds",
            "2",
            "--workers",
            "1",
            "--match-passes",
            "1",
        ]
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = await asyncio.to_thread(args.handler, args)
    lines = out.getvalue().strip().splitlines()
    print("\n" + "\n".join(lines))
    figures = [json.loads(line) for line in lines]
    result = figures[-1]
    assert {"positions_per_s", "gnubg_nn_per_s", "ratio", "match_7pt_s"} <= set(result)
    assert result["match_7pt_s"] > 0 and result["match_7pt_in_process_s"] > 0
    assert result["match_7pt_games"] >= 2 and result["match_7pt_decisions"] >= 100
    ratio = result["in_process_per_s"] / result["gnubg_nn_per_s"]
    assert abs(result["ratio"] - ratio) < 0.002
    assert result["grpc_errors"] == 0, result["first_error"]
    assert result["positions_per_s"] > 0 and result["grpc_calls_ok"] > 0
    assert {f["figure"] for f in figures[:-1]} >= {"pass", "in_process", "match", "grpc"}
    assert status == 0
