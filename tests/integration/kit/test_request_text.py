"""Every text a request carries, to every method of every service, with a NUL character or
10,000 characters: INVALID_ARGUMENT naming the field, never a database error turned
INTERNAL (``services/kit/request_text.py``).

The requests are built from the descriptors, so a new method or field is swept with no
change here. Each call is otherwise as the method's callers make it: players' methods
with a player's token (a compliance officer's, so staff methods admit it), internal
methods as their declared caller.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from services.kit.request_text import max_length
from tavla.accounts.v1 import accounts_pb2
from tavla.analysis.v1 import analysis_pb2
from tavla.antiabuse.v1 import antiabuse_pb2
from tavla.common.v1 import auth_pb2
from tavla.game.v1 import game_pb2
from tavla.geo.v1 import geo_pb2
from tavla.matchmaking.v1 import matchmaking_pb2
from tavla.wallet.v1 import wallet_pb2
from tests.support.analysis import start_analysis
from tests.support.game import start_game_service
from tests.support.identity import player_token
from tests.support.matchmaking import start_matchmaking
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)
from tests.support.wallet import start_wallet

NUL = "a\x00b"
LONG = "x" * 10_000
PLAYER = str(uuid.uuid4())
PLAYER_METADATA = [
    ("authorization", f"Bearer {player_token(PLAYER, residence='MT', roles=['compliance'])}")
]


@dataclass(frozen=True)
class Services:
    running: dict[str, RunningService]


@pytest.fixture(scope="module")
async def services(
    postgres_server: Any, kafka_broker: Any, accounts_service: RunningService,
    geo_service: RunningService,
) -> AsyncIterator[Services]:
    from services.antiabuse.main import wiring as antiabuse_wiring

    def url(name: str) -> str:
        return str(postgres_server.url(new_database(postgres_server, name)))

    bootstrap = kafka_broker.bootstrap
    wallet = await start_wallet(url("text_wallet"), bootstrap, geo_address=geo_service.address)
    game = await start_game_service(url("text_game"), bootstrap, geo_address=geo_service.address)
    matchmaking = await start_matchmaking(
        url("text_matchmaking"), bootstrap, wallet_address=wallet.address,
        game_address=game.running.address, geo_address=geo_service.address,
    )
    antiabuse = await start_service(
        fast_settings("antiabuse", url("text_antiabuse"), bootstrap), antiabuse_wiring
    )
    analysis = await start_analysis(postgres_server, kafka_broker)
    yield Services({
        "accounts": accounts_service, "geo": geo_service, "wallet": wallet,
        "game": game.running, "matchmaking": matchmaking, "antiabuse": antiabuse,
        "analysis": analysis.running,
    })
    for running in (matchmaking, antiabuse, wallet, game.running):
        await stop_service(running)
    await analysis.stop()


def text_paths(message: Descriptor, prefix: str = "", seen: frozenset[str] = frozenset()
               ) -> Iterator[tuple[str, FieldDescriptor]]:
    """Every string field a request can carry, as a dotted path (``[]``: a list's first)."""
    for field in message.fields:
        repeated = "[]" if field.is_repeated else ""
        if field.type == FieldDescriptor.TYPE_STRING:
            yield f"{prefix}{field.name}{repeated}", field
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            inner = field.message_type
            if inner.full_name in seen or inner.full_name.startswith("google.protobuf"):
                continue
            yield from text_paths(inner, f"{prefix}{field.name}{repeated}.",
                                  seen | {inner.full_name})


def request_with(method: MethodDescriptor, path: str, value: str) -> Message:
    request = GetMessageClass(method.input_type)()
    target: Any = request
    *parents, last = path.split(".")
    for part in parents:
        target = getattr(target, part[:-2]).add() if part.endswith("[]") else getattr(target, part)
    if last.endswith("[]"):
        getattr(target, last[:-2]).append(value)
    else:
        setattr(target, last, value)
    return request


def serialise(message: Message) -> bytes:
    return message.SerializeToString()


async def call(channel: grpc.aio.Channel, method: MethodDescriptor, request: Message
               ) -> grpc.StatusCode:
    path = f"/{method.containing_service.full_name}/{method.name}"
    response_type = GetMessageClass(method.output_type)
    access = method.GetOptions().Extensions[auth_pb2.access].access
    metadata = PLAYER_METADATA if access == auth_pb2.ACCESS_PLAYER else []
    try:
        async with asyncio.timeout(10):
            if method.server_streaming:
                stream = channel.unary_stream(
                    path, request_serializer=serialise,
                    response_deserializer=response_type.FromString)(request, metadata=metadata)
                async for _ in stream:
                    break
                stream.cancel()
            else:
                await channel.unary_unary(
                    path, request_serializer=serialise,
                    response_deserializer=response_type.FromString)(request, metadata=metadata)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


AREAS = {
    "accounts": accounts_pb2, "game": game_pb2, "matchmaking": matchmaking_pb2,
    "wallet": wallet_pb2, "analysis": analysis_pb2, "antiabuse": antiabuse_pb2, "geo": geo_pb2,
}


@pytest.mark.parametrize("area", sorted(AREAS))
async def test_a_nul_or_an_overlong_text_is_invalid_argument_in_every_method(
    services: Services, area: str
) -> None:
    channel = services.running[area].channel
    wrong: list[str] = []
    for service in AREAS[area].DESCRIPTOR.services_by_name.values():
        for method in service.methods:
            for path, field in text_paths(method.input_type):
                for what, value in (("NUL", NUL), ("10k", LONG)):
                    code = await call(channel, method, request_with(method, path, value))
                    allowed = what == "10k" and max_length(field) >= len(LONG)
                    if code is not grpc.StatusCode.INVALID_ARGUMENT and not allowed:
                        wrong.append(f"{method.name} {path} {what}: {code.name}")
                    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
                        wrong.append(f"{method.name} {path} {what}: {code.name} (a 500)")
    assert not wrong, "\n".join(wrong)
