"""`tavla gateway config`: render the gateway's Envoy config from a settings file.

The Helm chart's gateway pod runs this in an init container (from the Tavla
image, which holds the descriptor set), so the cluster's Envoy config comes from
the same code as the one `tavla dev` starts.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from services.kit.gateway.config import render
from services.kit.gateway.methods import api_methods
from services.kit.gateway.settings import GatewaySettings, SettingsError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gateway = subparsers.add_parser("gateway", help="the API gateway (Envoy)")
    commands = gateway.add_subparsers(dest="gateway_command", required=True, metavar="COMMAND")
    config = commands.add_parser(
        "config", help="render the Envoy config from a JSON settings file and the descriptor set"
    )
    config.add_argument("--settings", type=Path, required=True,
                        help="JSON gateway settings (see services/kit/gateway/settings.py)")
    config.add_argument("--descriptor", type=Path, required=True,
                        help="the descriptor set to read the API from (gen/tavla.pb)")
    config.add_argument("--out", type=Path, help="write here instead of standard output")
    config.set_defaults(handler=_config)


def _config(args: argparse.Namespace) -> int:
    try:
        raw = json.loads(args.settings.read_text())
        settings = GatewaySettings.from_mapping(raw)
        methods = api_methods(args.descriptor)
    except (OSError, json.JSONDecodeError, SettingsError) as error:
        print(f"tavla gateway config: {error}", file=sys.stderr)
        return 2
    text = json.dumps(render(settings, methods), indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    return 0
