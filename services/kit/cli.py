"""``tavla serve`` and ``tavla migrate``: run one service, or migrate its database."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys

from services.kit import failpoints
from services.kit.config import ConfigError, Env, Settings
from services.kit.lean_imports import collector_paused
from services.kit.ports import SERVICES


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = subparsers.add_parser("serve", help="run one service in the foreground")
    serve.add_argument("service", choices=sorted(SERVICES))
    serve.set_defaults(handler=_serve)

    migrate = subparsers.add_parser(
        "migrate", help="apply a service's database migrations and exit (a Kubernetes job)"
    )
    migrate.add_argument("service", choices=sorted(SERVICES))
    migrate.set_defaults(handler=_migrate)


def _serve(args: argparse.Namespace) -> int:
    try:
        armed = failpoints.configure()  # a test's typo is reported before anything else
        settings = Settings.from_env(args.service)
    except ConfigError as error:
        print(f"tavla serve {args.service}: {error}", file=sys.stderr)
        return 2
    if armed:  # a test facility: say so loudly in the process's own output
        print(f"tavla serve {args.service}: fail points armed: {', '.join(armed)}", file=sys.stderr)
    with collector_paused():  # the service's start-up freezes them anyway (tune_garbage_collector)
        main = importlib.import_module(f"services.{args.service}.main")
    try:
        asyncio.run(main.serve(settings))
    except ConfigError as error:
        print(f"tavla serve {args.service}: {error}", file=sys.stderr)
        return 2
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from services.kit.migrate import upgrade

    try:
        url = Env().text("TAVLA_DATABASE_URL")
    except ConfigError as error:
        print(f"tavla migrate {args.service}: {error}", file=sys.stderr)
        return 2
    upgrade(args.service, url)
    print(f"{args.service}: database at the newest revision")
    return 0
