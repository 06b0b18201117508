"""The demo's only way in: JSON over HTTP to the gateway, as any client app calls it.

Each player calls from an address of their own, named in ``X-Forwarded-For`` as
the one proxy the dev gateway trusts with ``TAVLA_DEV_XFF_TRUSTED_HOPS=1`` would
append it: the gateway hands services that address (never the header a client
wrote before it), so geo places the player and anti-abuse sees one address per
person. Standard library only (``urllib``): nothing beyond what ``tavla`` needs.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")
PASSWORD = "correct horse battery"


class StepFailed(Exception):
    """What went wrong in a step, in words for the person watching the demo."""


@dataclass(frozen=True)
class Reply:
    status: int
    body: dict[str, Any]

    @property
    def message(self) -> str:
        return str(self.body.get("message", self.body))


@dataclass
class Gateway:
    base_url: str
    timeout: float = 30.0

    def call(self, method: str, path: str, body: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> Reply:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method,
            headers={"content-type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                return Reply(answer.status, _json(answer.read()))
        except urllib.error.HTTPError as error:
            return Reply(error.code, _json(error.read()))
        except OSError as error:
            raise StepFailed(f"{method} {path}: the gateway at {self.base_url} did not answer "
                             f"({error})") from None

    def ok(self, method: str, path: str, body: dict[str, Any] | None = None,
           headers: dict[str, str] | None = None) -> dict[str, Any]:
        """The answer's body; anything but 200 fails the step with the gateway's message."""
        reply = self.call(method, path, body, headers)
        if reply.status != 200:
            raise StepFailed(f"{method} {path}: {reply.status} {reply.message}")
        return reply.body


def _json(raw: bytes) -> dict[str, Any]:
    try:
        found = json.loads(raw or b"{}")
    except ValueError:
        return {"message": raw.decode(errors="replace")}
    return found if isinstance(found, dict) else {"answer": found}


@dataclass
class Player:
    """A signed-up, logged-in player and the address their calls come from."""

    name: str
    email: str
    address: str
    account_id: str = ""
    token: str = ""
    device: str = field(default_factory=lambda: f"demo-device-{uuid.uuid4().hex[:12]}")

    @property
    def headers(self) -> dict[str, str]:
        found = {"x-forwarded-for": self.address, "x-tavla-device-id": self.device}
        if self.token:
            found["authorization"] = f"Bearer {self.token}"
        return found


def register(gateway: Gateway, name: str, residence: str, address: str) -> Player:
    """Register (residence, date of birth) and log in, both from ``address``."""
    unique = f"{name}{uuid.uuid4().hex[:6]}"
    player = Player(unique, f"{unique}@example.com", address)
    created = gateway.ok("POST", "/v1/accounts", {
        "email": player.email, "password": PASSWORD, "displayName": unique,
        "residence": residence, "dateOfBirth": "1990-04-21",
    }, player.headers)
    player.account_id = created["accountId"]
    session = gateway.ok("POST", "/v1/sessions",
                         {"email": player.email, "password": PASSWORD}, player.headers)
    player.token = session["accessToken"]
    return player


def balance(gateway: Gateway, player: Player, currency: str = "USD") -> tuple[int, int]:
    """(available, held) in minor units."""
    answer = gateway.ok("GET", "/v1/wallet/balances", headers=player.headers)
    for entry in answer.get("balances", []):
        if entry["currency"] == currency:
            return int(entry["available"]["minorUnits"]), int(entry["held"]["minorUnits"])
    return 0, 0


def until(check: Callable[[], T | None], what: str, timeout: float = 120.0,
          every: float = 0.25) -> T:
    """``check()``'s first answer that is not None/False, or the step fails naming ``what``."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise StepFailed(f"{what}: not seen within {timeout:.0f} s")
        time.sleep(every)
