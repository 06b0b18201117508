"""`tavla dev`: start the whole platform locally (what `make run` runs)."""

from __future__ import annotations

import argparse
import dataclasses
import sys


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dev = subparsers.add_parser(
        "dev",
        help="run PostgreSQL, the broker, every service and the gateway in the foreground",
        description=(
            "Start the platform on this machine and stay in the foreground; Ctrl-C stops "
            "everything. TAVLA_DATABASE_URL / TAVLA_KAFKA_BOOTSTRAP use external servers, "
            "TAVLA_DEV_DIR moves the run dir (default .tavla/), TAVLA_DEV_PORT_OFFSET shifts "
            "every port."
        ),
    )
    dev.add_argument(
        "--timeout", type=float, default=None,
        help="seconds to wait for the gateway's /healthz (default 120, or TAVLA_DEV_TIMEOUT)",
    )
    dev.set_defaults(handler=_dev)


def _dev(args: argparse.Namespace) -> int:
    # Imported here: the local components ship in the `local` extra, which a
    # production image does not install, and `tavla serve` must not need them.
    from services.kit.devstack.dev import DevError, DevSettings, run

    try:
        settings = DevSettings.from_env()
    except DevError as error:
        print(f"tavla dev: {error}", file=sys.stderr)
        return 2
    if args.timeout is not None:
        settings = dataclasses.replace(settings, healthz_timeout=args.timeout)
    return run(settings)
