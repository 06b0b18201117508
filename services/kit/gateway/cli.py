"""`tavla gateway config` and `tavla gateway openapi`: the gateway's Envoy config from a
settings file, and the OpenAPI document of its REST surface.

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
from services.kit.gateway.openapi import openapi_document
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
    openapi = commands.add_parser(
        "openapi", help="print the OpenAPI document of the REST surface (from the descriptor set)"
    )
    openapi.add_argument("--descriptor", type=Path, default=Path("gen/tavla.pb"),
                         help="the descriptor set to read the API from (default gen/tavla.pb)")
    openapi.add_argument("--out", type=Path, help="write here instead of standard output")
    openapi.set_defaults(handler=_openapi)


def _config(args: argparse.Namespace) -> int:
    try:
        raw = json.loads(args.settings.read_text())
        settings = GatewaySettings.from_mapping(raw)
        methods = api_methods(args.descriptor)
        document = openapi_document(args.descriptor, areas=settings.upstreams)
    except (OSError, json.JSONDecodeError, SettingsError) as error:
        print(f"tavla gateway config: {error}", file=sys.stderr)
        return 2
    text = json.dumps(render(settings, methods, openapi=document), indent=2) + "\n"
    return _write(text, args.out)


def _openapi(args: argparse.Namespace) -> int:
    try:
        document = openapi_document(args.descriptor)
    except OSError as error:
        print(f"tavla gateway openapi: {error}", file=sys.stderr)
        return 2
    return _write(json.dumps(document, indent=2) + "\n", args.out)


def _write(text: str, out: Path | None) -> int:
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text)
        print(f"wrote {out}", file=sys.stderr)
    return 0
