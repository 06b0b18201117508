"""`tavla dev`: start the whole platform locally (what `make run` runs); `tavla demo` on it."""

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
            "every port, TAVLA_DEV_PORT_BASE lays them all out from one port instead."
        ),
    )
    dev.add_argument(
        "--timeout", type=float, default=None,
        help="seconds to wait for the gateway's /healthz (default 120, or TAVLA_DEV_TIMEOUT)",
    )
    dev.set_defaults(handler=_dev)
    demo = subparsers.add_parser(
        "demo",
        help="run the whole story on a running `tavla dev` through its gateway",
        description=(
            "Two players register, top up, meet, play a real-money game to the end, are "
            "settled by the commission schedule and read their analysis; a Florida player "
            "is refused real money; a chip-dumping pair is flagged on the compliance stream. "
            "Finds the stack as `tavla dev` places it (TAVLA_DEV_PORT_OFFSET or "
            "TAVLA_DEV_PORT_BASE); the stack must run with TAVLA_DEV_XFF_TRUSTED_HOPS=1. "
            "Exit 1 names the step that failed."
        ),
    )
    demo.set_defaults(handler=_demo)


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


def _demo(args: argparse.Namespace) -> int:
    from services.kit import ports
    from services.kit.devstack.demo.gateway import Gateway
    from services.kit.devstack.demo.story import Story, run
    from services.kit.devstack.dev import DevError, DevSettings

    try:
        settings = DevSettings.from_env()
    except DevError as error:
        print(f"tavla demo: {error}", file=sys.stderr)
        return 2
    bootstrap = settings.kafka_bootstrap or f"127.0.0.1:{settings.port(ports.DEV_KAFKA_PORT)}"
    gateway = Gateway(f"http://127.0.0.1:{settings.gateway_port}")
    return run(Story(gateway, bootstrap))
