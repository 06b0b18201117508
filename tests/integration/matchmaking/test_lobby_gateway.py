"""Two players meet in the lobby through the real Envoy gateway (REST/JSON, the dev config),
in front of the real matchmaking, game, wallet and geo services."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.keys import public_jwk
from tests.integration.matchmaking.conftest import Lobby
from tests.support.identity import PLAYER_KEY, PLAYER_KID, player_token
from tests.support.matchmaking import new_player
from tests.support.wallet import top_up

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


async def test_two_players_create_and_join_a_table_through_the_gateway(
    lobby: Lobby, tmp_path: Path, supervisor: Supervisor
) -> None:
    # The gateway verifies the tests' player tokens with the same key the services use.
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [public_jwk(PLAYER_KEY.public_key(), PLAYER_KID)]}))
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR,
        jwks_file=jwks,
        upstreams={"matchmaking": lobby.matchmaking.settings.grpc_port},
        listen_port=listen,
        admin_port=admin,
        health_interval=0.2,
    )
    gateway = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin, supervisor)
    gateway.start()
    owner, joiner = new_player(), new_player()
    for player in (owner, joiner):  # play money is held as real money is
        await top_up(lobby.wallet, player)

    def bearer(account: str) -> dict[str, str]:
        return {"authorization": f"Bearer {player_token(account, residence='MT')}"}

    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=20) as client:
            async with asyncio.timeout(30):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
            # Play money: the gateway sees these calls come from 127.0.0.1, which no
            # geo database places, and an unplaced address may play for play money only.
            body = {
                "rules": {
                    "kind": "PLAY_KIND_MATCH",
                    "matchLength": 3,
                    "stake": {"minorUnits": "250", "currency": "PLAY"},
                },
                "idempotencyKey": "first-table",
            }
            created = await client.post("/v1/tables", json=body, headers=bearer(owner))
            assert created.status_code == 200, created.text
            table = created.json()
            assert table["status"] == "TABLE_STATUS_OPEN"
            assert table["rules"]["crawford"] is True  # matches play Crawford by default
            listed = await client.get("/v1/tables?currency=PLAY", headers=bearer(joiner))
            assert listed.status_code == 200, listed.text
            assert table["tableId"] in [t["tableId"] for t in listed.json()["tables"]]
            anonymous = await client.post(f"/v1/tables/{table['tableId']}:join", json={})
            assert anonymous.status_code == 401
            joined = await client.post(
                f"/v1/tables/{table['tableId']}:join",
                json={"idempotencyKey": "sit"},
                headers=bearer(joiner),
            )
            assert joined.status_code == 200, joined.text
            started = joined.json()
            assert started["status"] == "TABLE_STATUS_PLAYING" and started["gameId"]
            assert [p["accountId"] for p in started["players"]] == [owner, joiner]
            again = await client.post(
                f"/v1/tables/{table['tableId']}:join", json={}, headers=bearer(new_player())
            )
            assert again.status_code == 400 and "is full" in again.text  # FAILED_PRECONDITION
    finally:
        gateway.stop()
