"""Cases through the real Envoy gateway (the dev config) to the real accounts and anti-abuse
services: cases and sanctions end to end. An operator makes an officer
(``tavla accounts grant-role``); the officer, signed in through the gateway with
a token the accounts service issued, opens a case from a multi-accounting alert
and proposes to terminate one account (approving it themselves is refused); a second
officer approves it through the gateway; the terminated player can neither sign in nor
register again through the gateway; a player's token is refused the case calls."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.antiabuse.main import wiring as antiabuse_wiring
from services.kit.devstack.keys import PRIVATE_KEY_FILE
from services.kit.devstack.supervisor import Supervisor
from tests.support.compliance import grant_role
from tests.support.gateway import envoy_in_front
from tests.support.identity import CERTIFICATES, PLAYER_KEY_FILE
from tests.support.services import (
    fast_settings,
    new_database,
    start_accounts,
    start_service,
    stop_service,
)

PASSWORD = "correct horse battery"


@dataclass
class Gateway:
    url: str
    accounts_database: str


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def gateway(
    tmp_path: Path, supervisor: Supervisor, postgres_server: Any, kafka_broker: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Gateway]:
    urls = {n: postgres_server.url(new_database(postgres_server, n))
            for n in ("accounts", "antiabuse")}
    accounts = await start_accounts(urls["accounts"], kafka_broker.bootstrap, PLAYER_KEY_FILE,
                                    monkeypatch)
    antiabuse = await start_service(
        fast_settings("antiabuse", urls["antiabuse"], kafka_broker.bootstrap), antiabuse_wiring
    )
    # The gateway verifies tokens with the JWKS of the key accounts signs with.
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)
    try:
        async with envoy_in_front(
            tmp_path, supervisor,
            {"accounts": accounts.gateway_port, "antiabuse": antiabuse.gateway_port},
            upstream_tls=CERTIFICATES.upstream_tls(),  # as deployed: the gateway's certificate
            xff_num_trusted_hops=1,  # a load balancer in front, as deployed
        ) as base_url:  # fmt: skip
            yield Gateway(base_url, urls["accounts"])
    finally:
        await stop_service(antiabuse)
        await stop_service(accounts)


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def client_headers(device: str, address: str) -> dict[str, str]:
    """The device header, and the address a trusted proxy in front of the gateway saw."""
    headers = {"x-forwarded-for": address} if address else {}
    return {**headers, "x-tavla-device-id": device} if device else headers


async def register(
    client: httpx.AsyncClient, email: str, device: str = "", address: str = ""
) -> httpx.Response:
    return await client.post("/v1/accounts", json={
        "email": email, "password": PASSWORD, "displayName": f"p{uuid.uuid4().hex[:10]}",
        "residence": "MT", "dateOfBirth": "1990-04-21",
    }, headers=client_headers(device, address))


async def login(
    client: httpx.AsyncClient, email: str, device: str = "", address: str = ""
) -> httpx.Response:
    return await client.post("/v1/sessions", json={"email": email, "password": PASSWORD},
                             headers=client_headers(device, address))


async def test_an_officer_terminates_an_account_through_the_gateway(gateway: Gateway) -> None:
    tag = uuid.uuid4().hex[:8]
    async with httpx.AsyncClient(base_url=gateway.url, timeout=20) as client:
        officer_email = f"officer-{tag}@example.com"
        assert (await register(client, officer_email)).status_code == 200
        await grant_role(gateway.accounts_database, officer_email)
        officer = bearer((await login(client, officer_email)).json()["accessToken"])

        shared = f"dev-{tag}"
        ann_email, bob_email = f"ann.{tag}@gmail.com", f"bob-{tag}@example.com"
        ann = (await register(client, ann_email, shared)).json()["accountId"]
        assert (await register(client, bob_email)).status_code == 200
        assert (await login(client, ann_email, shared)).status_code == 200
        bob_login = await login(client, bob_email, shared)
        player = bearer(bob_login.json()["accessToken"])

        async with asyncio.timeout(90):
            while True:
                listed = await client.get(f"/v1/compliance/alerts?accountId={ann}",
                                          headers=officer)
                assert listed.status_code == 200, listed.text
                if alerts := listed.json().get("alerts", []):
                    break
                await asyncio.sleep(0.3)
        alert_id = alerts[0]["alertId"]

        refused = await client.post("/v1/compliance/cases", json={"alertIds": [alert_id]},
                                    headers=player)
        assert refused.status_code == 403, refused.text
        opened = await client.post("/v1/compliance/cases",
                                   json={"alertIds": [alert_id], "note": "one device"},
                                   headers=officer)
        assert opened.status_code == 200, opened.text
        case_id = opened.json()["caseId"]
        noted = await client.post(f"/v1/compliance/cases/{case_id}:note",
                                  json={"note": "same phone"}, headers=officer)
        assert noted.status_code == 200, noted.text
        resolved = await client.post(f"/v1/compliance/cases/{case_id}:resolve", json={
            "outcome": "CASE_STATUS_SANCTIONED", "note": "multi-accounting",
            "sanctions": [{"kind": "SANCTION_KIND_TERMINATE_ACCOUNT", "accountId": ann}],
        }, headers=officer)
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["status"] == "CASE_STATUS_OPEN"  # a proposal
        own = await client.post(f"/v1/compliance/cases/{case_id}:approve", json={},
                                headers=officer)
        assert own.status_code == 403 and "second, different" in own.text, own.text
        # The second officer works elsewhere: their sign-up and login do not use up this
        # address's registrations (5 a minute), which the end of the test needs.
        second_email, elsewhere = f"second-{tag}@example.com", "203.0.113.77"
        assert (await register(client, second_email, address=elsewhere)).status_code == 200
        await grant_role(gateway.accounts_database, second_email)
        second_login = await login(client, second_email, address=elsewhere)
        second = bearer(second_login.json()["accessToken"])
        approved = await client.post(f"/v1/compliance/cases/{case_id}:approve",
                                     json={"note": "agreed"}, headers=second)
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "CASE_STATUS_SANCTIONED"
        fetched = await client.get(f"/v1/compliance/cases/{case_id}", headers=officer)
        assert [e["action"] for e in fetched.json()["log"]] == [
            "opened", "note", "proposed", "approved", "sanction", "resolved"
        ]

        # Until accounts applies the sanction, logins succeed; polled gently, since the
        # gateway allows 10 logins a minute per address (a 429 only means "ask later").
        async with asyncio.timeout(120):
            while (answer := await login(client, ann_email)).status_code in (200, 429):
                await asyncio.sleep(3)
        assert answer.status_code == 400, answer.text  # FAILED_PRECONDITION
        again = await register(client, f"A.N.N.{tag.upper()}@gmail.com")
        assert again.status_code == 400 and "terminated" in again.text, again.text
        same_device = await register(client, f"new-{tag}@example.com", shared)
        assert same_device.status_code == 400 and "terminated" in same_device.text
