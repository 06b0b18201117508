"""Table chat over REST through the real Envoy gateway (the dev config) to the real game
service: one player posts, the other reads it on the game's watch stream; a blocked
message is refused with its reason, an anonymous post never reaches the service."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.kit.clock import ManualClock
from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.keys import PRIVATE_KEY_FILE, ensure_signing_keys
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from tests.support.game import GameHandle, create_request, start_game_service
from tests.support.gateway import DESCRIPTOR
from tests.support.identity import PLAYER_KEY_FILE, player_token
from tests.support.services import new_database, stop_service


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def stack(
    tmp_path: Path, supervisor: Supervisor, postgres_server: Any, kafka_broker: Any
) -> AsyncIterator[tuple[str, GameHandle]]:
    database = postgres_server.url(new_database(postgres_server, "game_chat_gateway"))
    game = await start_game_service(database, kafka_broker.bootstrap, ManualClock())
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR, jwks_file=keys.jwks_file,
        upstreams={"game": game.running.settings.grpc_port}, listen_port=listen,
        admin_port=admin, health_interval=0.2,
    )  # fmt: skip
    envoy = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin, supervisor)
    envoy.start()
    try:
        async with httpx.AsyncClient(base_url=envoy.base_url, timeout=10) as client:
            async with asyncio.timeout(60):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
        yield envoy.base_url, game
    finally:
        envoy.stop()
        await stop_service(game.running)


def bearer(account: str) -> dict[str, str]:
    return {"authorization": f"Bearer {player_token(account, residence='MT')}"}


async def read_until(response: httpx.Response, words: str) -> str:
    seen = ""
    async with asyncio.timeout(30):
        async for chunk in response.aiter_text():
            seen += chunk
            if words in seen:
                return seen
    raise AssertionError(f"the stream ended without {words!r}: {seen}")


async def test_post_over_rest_and_receive_on_the_watch_stream(
    stack: tuple[str, GameHandle],
) -> None:
    base_url, game = stack
    created = await game.stub.CreateGame(create_request())
    game_id = created.game_id
    alice, bob = (p.account_id for p in created.players)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        async with client.stream(
            "GET", f"/v1/games/{game_id}:watch", headers=bearer(bob)
        ) as stream:
            assert stream.status_code == 200
            posted = await client.post(
                f"/v1/games/{game_id}/chat", json={"text": "hello bob"}, headers=bearer(alice)
            )
            assert posted.status_code == 200, posted.text
            message = posted.json()
            assert message["text"] == "hello bob" and message["status"] == "CHAT_STATUS_DELIVERED"
            seen = await read_until(stream, "hello bob")
        assert message["messageId"] in seen and "tavla.game.v1.ChatMessagePosted" in seen

        blocked = await client.post(
            f"/v1/games/{game_id}/chat", json={"text": "see www.spam.example"}, headers=bearer(bob)
        )
        assert blocked.status_code == 400 and "[link]" in blocked.text  # FAILED_PRECONDITION
        anonymous = await client.post(f"/v1/games/{game_id}/chat", json={"text": "hi"})
        assert anonymous.status_code == 401
        muted = await client.post(
            f"/v1/games/{game_id}/chat:mute", json={"muted": True}, headers=bearer(bob)
        )
        assert muted.status_code == 200 and json.loads(muted.text)["muted"] is True
