"""``tavla tournament create``: an operator creates a tournament (CreateTournament, caller ops).

``tavla tournament create --request FILE [--address HOST:PORT] [--key-file PEM]`` sends
the CreateTournament request in FILE (its proto3 JSON: ``name``, ``rules``,
``idempotencyKey``; the key makes a retry answer the same tournament) to the
tournaments service at ``--address`` (default ``TAVLA_TOURNAMENTS_ADDRESS``), signed
with the operator tools' service key (``--key-file``, default
``TAVLA_SERVICE_KEY_FILE``: the ``ops`` key, ``.tavla/service-keys/ops.key.pem``
under ``tavla dev``). It prints the created tournament as JSON (rules, seed
commitment). Exit status 1 when the service refuses (the status and its message on one
line, e.g. rules it cannot run), 2 for a bad file or a missing setting.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import grpc
from google.protobuf import json_format

from services.kit.client import service_channel
from services.kit.config import ConfigError
from services.kit.keys import load_private_key
from services.kit.service_tokens import ServiceTokenMinter
from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc

OPERATOR = "ops"
USAGE_ERROR, REFUSED = 2, 1


def add_create(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    create = commands.add_parser(
        "create",
        help="create a tournament from a CreateTournament request in JSON (operators)",
        description="Send a CreateTournament request as the operator tools (caller ops).",
    )
    create.add_argument("--request", required=True, type=Path, metavar="FILE",
                        help="the request as proto3 JSON: name, rules, idempotencyKey")
    create.add_argument("--address", default=os.environ.get("TAVLA_TOURNAMENTS_ADDRESS"),
                        metavar="HOST:PORT", help="default: TAVLA_TOURNAMENTS_ADDRESS")
    create.add_argument("--key-file", default=os.environ.get("TAVLA_SERVICE_KEY_FILE"),
                        type=Path, metavar="PEM",
                        help="the ops service key (default: TAVLA_SERVICE_KEY_FILE)")
    create.set_defaults(handler=run_create)


def run_create(args: argparse.Namespace) -> int:
    try:
        if not args.address:
            raise ConfigError("--address or TAVLA_TOURNAMENTS_ADDRESS is required")
        if args.key_file is None:
            raise ConfigError("--key-file or TAVLA_SERVICE_KEY_FILE (the ops key) is required")
        request = read_request(args.request)
        minter = ServiceTokenMinter(OPERATOR, load_private_key(args.key_file, "--key-file"))
    except ConfigError as error:
        print(f"tavla tournament create: {error}", file=sys.stderr)
        return USAGE_ERROR
    try:
        created = asyncio.run(create(args.address, minter, request))
    except grpc.aio.AioRpcError as error:
        print(f"tavla tournament create: {error.code().name}: {error.details()}", file=sys.stderr)
        return REFUSED
    print(json_format.MessageToJson(created, indent=None))
    return 0


def read_request(path: Path) -> tournaments_pb2.CreateTournamentRequest:
    try:
        return json_format.Parse(path.read_text(), tournaments_pb2.CreateTournamentRequest())
    except OSError as error:
        raise ConfigError(f"--request {str(path)!r}: {error.strerror}") from None
    except json_format.ParseError as error:
        raise ConfigError(
            f"--request {str(path)!r} is not a CreateTournament request: {error}"
        ) from None


async def create(
    address: str, minter: ServiceTokenMinter, request: tournaments_pb2.CreateTournamentRequest
) -> tournaments_pb2.Tournament:
    channel = service_channel(address, target="tournaments", credentials=minter)
    try:
        stub = tournaments_pb2_grpc.TournamentsServiceStub(channel)
        created: tournaments_pb2.Tournament = await stub.CreateTournament(request, timeout=10)
        return created
    finally:
        await channel.close(None)
