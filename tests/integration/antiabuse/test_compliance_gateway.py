"""The compliance API through the real Envoy gateway (the dev config) to the real anti-abuse
service: any valid token is routed, only one carrying the compliance role is served."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.antiabuse.main import wiring
from services.kit.devstack.keys import PRIVATE_KEY_FILE
from services.kit.devstack.supervisor import Supervisor
from tests.support.gateway import envoy_in_front
from tests.support.identity import PLAYER_KEY_FILE, player_token
from tests.support.services import fast_settings, new_database, start_service, stop_service


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(
    tmp_path: Path, supervisor: Supervisor, postgres_server: Any, kafka_broker: Any
) -> AsyncIterator[str]:
    database = new_database(postgres_server, "antiabuse")
    service = await start_service(
        fast_settings("antiabuse", postgres_server.url(database), kafka_broker.bootstrap), wiring
    )
    # The gateway verifies tokens with the JWKS of the key the test tokens are signed with.
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)
    try:
        async with envoy_in_front(
            tmp_path, supervisor, {"antiabuse": service.settings.grpc_port}
        ) as base_url:
            yield base_url
    finally:
        await stop_service(service)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_only_a_compliance_token_reads_alerts_through_the_gateway(gateway: str) -> None:
    officer = bearer(player_token("officer-7", roles=["compliance"]))
    async with httpx.AsyncClient(base_url=gateway, timeout=10) as client:
        anonymous = await client.get("/v1/compliance/alerts")
        assert anonymous.status_code == 401
        player = await client.get("/v1/compliance/alerts", headers=bearer(player_token("p-1")))
        assert player.status_code == 403, player.text
        assert "compliance" in player.text
        listed = await client.get("/v1/compliance/alerts?pageSize=5", headers=officer)
        assert listed.status_code == 200, listed.text
        assert listed.json().get("alerts", []) == []
        risk = await client.get("/v1/compliance/accounts/acct-1/risk", headers=officer)
        assert risk.status_code == 200 and risk.json()["accountId"] == "acct-1"
        missing = await client.post(
            "/v1/compliance/alerts/no-such-alert:resolve",
            json={"status": "ALERT_STATUS_DISMISSED", "note": "checked"},
            headers=officer,
        )
        assert missing.status_code == 404, missing.text
