"""Cases and sanctions end to end, through the gateway only, on the real stack (`tavla
dev`: every service its own `tavla serve`, PostgreSQL, the broker, Envoy; the session's
shared stack, `dev_stack`): an operator
makes a compliance officer with `tavla accounts grant-role` on the dev accounts
database; two accounts log in from one device and anti-abuse flags them; the
officer opens a case from the alert and proposes to terminate one account, a second
officer approves it; the terminated
player cannot sign in, nor register again with the same mailbox spelled
otherwise or from the same device.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from typing import Any

import httpx
import pytest

from services.kit.devstack.postgres import SUPERUSER
from tests.e2e.devstack import DevRun

PASSWORD = "correct horse battery"
# The gateway allows 5 registrations a minute per client address: each call from its own.
_ADDRESSES = itertools.count(100)


def post(run: DevRun, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
         ) -> httpx.Response:
    source = f"127.0.1.{next(_ADDRESSES) % 200 + 10}"
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(base_url=run.gateway, timeout=30, transport=transport) as client:
        return client.post(path, json=body, headers=headers or {})


def register(run: DevRun, email: str, device: str = "") -> httpx.Response:
    return post(run, "/v1/accounts", {
        "email": email, "password": PASSWORD, "displayName": f"p{uuid.uuid4().hex[:10]}",
        "residence": "MT", "dateOfBirth": "1990-04-21",
    }, {"x-tavla-device-id": device} if device else {})


def login(run: DevRun, email: str, device: str = "") -> httpx.Response:
    return post(run, "/v1/sessions", {"email": email, "password": PASSWORD},
                {"x-tavla-device-id": device} if device else {})


def poll(check: Any, what: str, timeout: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.3)
    pytest.fail(f"{what}: not seen after {timeout:.0f}s")


def compliance_officer(run: DevRun, email: str) -> dict[str, str]:
    """A new account made an officer by the operator's command: its authorization header."""
    assert register(run, email).status_code == 200
    accounts_db = f"postgresql+asyncpg://{SUPERUSER}@127.0.0.1:{run.postgres_port}/tavla_accounts"
    granted = subprocess.run(
        [sys.executable, "-m", "services.cli", "accounts", "grant-role", "--email",
         email, "--role", "compliance"],
        env={**os.environ, "TAVLA_DATABASE_URL": accounts_db}, capture_output=True, text=True,
        timeout=60,
    )
    assert granted.returncode == 0, granted.stderr
    return {"authorization": f"Bearer {login(run, email).json()['accessToken']}"}


def test_an_officer_terminates_an_account_and_the_player_cannot_register_again(
    dev_stack: DevRun,
) -> None:
    run = dev_stack
    tag = uuid.uuid4().hex[:8]
    officer_email = f"officer-{tag}@example.com"
    officer = compliance_officer(run, officer_email)
    second = compliance_officer(run, f"second-{tag}@example.com")

    shared = f"dev-{tag}"
    ann_email, bob_email = f"ann.{tag}@gmail.com", f"bob-{tag}@example.com"
    created = register(run, ann_email, shared)
    assert created.status_code == 200, created.text
    ann = created.json()["accountId"]
    assert register(run, bob_email).status_code == 200
    assert login(run, ann_email, shared).status_code == 200
    assert login(run, bob_email, shared).status_code == 200

    with httpx.Client(base_url=run.gateway, timeout=30) as client:
        def alerts() -> list[dict[str, Any]]:
            listed = client.get(f"/v1/compliance/alerts?accountId={ann}", headers=officer)
            assert listed.status_code == 200, listed.text
            found: list[dict[str, Any]] = listed.json().get("alerts", [])
            return found

        alert = poll(alerts, "the multi-accounting alert")[0]
        assert alert["detector"] == "multi_accounting"
        opened = client.post("/v1/compliance/cases", headers=officer,
                             json={"alertIds": [alert["alertId"]], "note": "one device"})
        assert opened.status_code == 200, opened.text
        case_id = opened.json()["caseId"]
        resolved = client.post(f"/v1/compliance/cases/{case_id}:resolve", headers=officer, json={
            "outcome": "CASE_STATUS_SANCTIONED", "note": "two accounts, one person",
            "sanctions": [{"kind": "SANCTION_KIND_TERMINATE_ACCOUNT", "accountId": ann}],
        })
        assert resolved.status_code == 200, resolved.text
        assert resolved.json()["status"] == "CASE_STATUS_OPEN"  # waits for a second officer
        approved = client.post(f"/v1/compliance/cases/{case_id}:approve", headers=second,
                               json={"note": "agreed"})
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "CASE_STATUS_SANCTIONED"

    refused = poll(lambda: (r := login(run, ann_email)).status_code == 400 and r,
                   "the terminated player's login refused")
    assert "closed" in refused.text
    for email, device in [(f"ANN.{tag}+back@googlemail.com", ""),
                          (f"new-{tag}@example.com", shared)]:
        again = register(run, email, device)
        assert again.status_code == 400 and "terminated" in again.text, again.text
