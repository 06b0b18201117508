"""The `tavla` command: one entry point, sub-commands contributed by each area.

Each area exposes ``register(subparsers)`` in its own ``cli.py``, and each
benchmark ``register_bench(bench_subparsers)`` for ``tavla bench <name>``; this
module only assembles them, so adding a command never touches another area's code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Modules that contribute sub-commands, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "services.kit.cli",
    "services.kit.events.tail",
    "services.accounts.cli",
    "services.wallet.cli",
    "services.kit.devstack.cli",
    "services.kit.gateway.cli",
    "services.geo.cli",
    "services.tournaments.cli",
    "services.matchmaking.ratings.cli",
    "services.backgammon.cli",
    "services.analysis.cli",
    "services.antiabuse.evaluation.runner",
    "services.chaos.suite",
)


# Modules that contribute a `tavla bench` sub-command.
BENCH_MODULES: tuple[str, ...] = (
    "services.backgammon.cli",
    "services.game.bench",
    "services.wallet.bench",
    "services.geo.bench",
    "services.matchmaking.bench",
    "services.analysis.bench",
    "services.antiabuse.bench",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tavla", description="Tavla backgammon platform.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    bench = subparsers.add_parser(
        "bench", help="run a benchmark; prints its figures, the last line as JSON"
    )
    benchmarks = bench.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name in BENCH_MODULES:
        importlib.import_module(name).register_bench(benchmarks)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
