"""``tavla geo check``: one decision from the command line, as JSON.

``tavla geo check --ip IP --purpose PURPOSE [--declared CODE] --city-db PATH
[--anonymous-db PATH] [--rules PATH]`` prints ``{"decision", "reasons",
"country", "region"}`` (``reasons`` is the list of codes). Without
``--anonymous-db`` no anonymous-network flag is known. A malformed address or
code, or an unreadable database or rule file, is exit status 2 with a one-line
message, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from services.geo.domain.purposes import Purpose
from services.geo.domain.rules import InvalidRules, load_rules_file, shipped_rules
from services.geo.lookup import AnonymousDatabase, CityDatabase, DatabaseError
from services.geo.service import GeoService
from services.kit.errors import InvalidArgument

if TYPE_CHECKING:
    # Only subscriptable for the type checker on Python 3.11.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
USAGE_ERROR = 2


def register(subparsers: Subparsers) -> None:
    geo = subparsers.add_parser("geo", help="geo tools: check a location against the rules")
    commands = geo.add_subparsers(dest="geo_command", required=True, metavar="SUBCOMMAND")
    check = commands.add_parser(
        "check",
        help="decide one location check and print it as JSON",
        description="Print {decision, reasons, country, region} for one address and purpose.",
    )
    check.add_argument("--ip", required=True, help="IPv4 or IPv6 address")
    check.add_argument("--purpose", required=True, choices=[p.value for p in Purpose])
    check.add_argument("--declared", default="", metavar="CODE", help="residence: MT, US-NJ")
    check.add_argument("--city-db", required=True, type=Path, metavar="PATH")
    check.add_argument("--anonymous-db", type=Path, default=None, metavar="PATH")
    check.add_argument("--rules", type=Path, default=None, metavar="PATH")
    check.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    try:
        service = _open(args)
    except (DatabaseError, InvalidRules, OSError) as error:
        print(f"tavla geo check: {error}", file=sys.stderr)
        return USAGE_ERROR
    try:
        checked = service.check_location(
            ip_address=args.ip, purpose=Purpose(args.purpose), declared=args.declared
        )
    except InvalidArgument as error:
        print(f"tavla geo check: {error.message}", file=sys.stderr)
        return USAGE_ERROR
    finally:
        service.close()
    decision = checked.decision
    output = {
        "decision": decision.outcome.value,
        "reasons": decision.codes,
        "country": decision.country,
        "region": decision.region,
    }
    print(json.dumps(output))
    return 0


def _open(args: argparse.Namespace) -> GeoService:
    rules = load_rules_file(args.rules) if args.rules else shipped_rules()
    city = CityDatabase.open(args.city_db)
    try:
        anonymous = AnonymousDatabase.open(args.anonymous_db) if args.anonymous_db else None
    except DatabaseError:
        city.close()
        raise
    return GeoService(rules, city, anonymous)
