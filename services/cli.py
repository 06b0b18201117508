"""The `tavla` command: one entry point, sub-commands contributed by each area.

Each area exposes ``register(subparsers)`` in its own ``cli.py``, and each
benchmark ``register_bench(bench_subparsers)`` for ``tavla bench <name>``; this
module only assembles them, so adding a command never touches another area's code
(only this module's table of which module owns which command, ``COMMAND_OWNERS``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys
from collections.abc import Sequence

from services.kit.lean_imports import collector_paused

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
    "services.chaos.sizing",
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
    "services.chaos.platform",
    "services.tournaments.bench",
)


# The commands each module of COMMAND_MODULES registers, so that `tavla <command>` imports
# only the module that owns it: every area's module (the benchmarks, the fault suite, the
# evaluation) costs about a second of CPU at each start of a process, every `tavla serve`
# included. tests/unit/kit/test_kit_cli.py keeps this table in step with the modules.
COMMAND_OWNERS: dict[str, str] = {
    "serve": "services.kit.cli",
    "migrate": "services.kit.cli",
    "events": "services.kit.events.tail",
    "accounts": "services.accounts.cli",
    "wallet": "services.wallet.cli",
    "dev": "services.kit.devstack.cli",
    "demo": "services.kit.devstack.cli",
    "gateway": "services.kit.gateway.cli",
    "geo": "services.geo.cli",
    "tournament": "services.tournaments.cli",
    "rating": "services.matchmaking.ratings.cli",
    "dice": "services.backgammon.cli",
    "rules": "services.backgammon.cli",
    "analysis": "services.analysis.cli",
    "abuse": "services.antiabuse.evaluation.runner",
    "chaos": "services.chaos.suite",
    "capacity": "services.chaos.sizing",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; only ``command``'s (and its module's) when a module owns it."""
    parser = argparse.ArgumentParser(prog="tavla", description="Tavla backgammon platform.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    owner = COMMAND_OWNERS.get(command or "")
    if owner is not None:
        importlib.import_module(owner).register(subparsers)
        return parser
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
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Run as the process's program (argv from sys.argv), the command's module is imported
    # without the cyclic collector's passes (services/kit/lean_imports.py); a test calling
    # main() with its arguments keeps its own collector as it is.
    importing = collector_paused() if argv is None else contextlib.nullcontext()
    with importing:
        parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    result: int = args.handler(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
