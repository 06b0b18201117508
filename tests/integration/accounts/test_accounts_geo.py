"""Register and login ask the geo service; logins are recorded and published with where they
came from. Real PostgreSQL, broker, geo service (dev databases) and Envoy.

The shipped rules (geo's ``tavla-2026-12``) block the six US states for real money
only: a resident may open an account for play money. The rules here are the
shipped ones with ``register`` and ``login`` added to those six states (an
operator's ``TAVLA_GEO_RULES`` file), so that registration and login refusals by
residence and by address are shown on real decisions. Which addresses are where:
services/geo/devdata.py.
"""

from __future__ import annotations

import asyncio
import tomllib
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import pytest
from sqlalchemy import text

from services.geo.devdata import FLORIDA_IP, MALTA_IP
from services.kit.client_signals import CLIENT_ADDRESS_HEADER, DEVICE_ID_HEADER
from services.kit.db import make_engine
from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.keys import ensure_signing_keys
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.keys import key_from_jwk
from services.kit.player_tokens import PlayerTokenVerifier, StaticKeys
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc, events_pb2
from tests.support.identity import CERTIFICATES, bare_channel
from tests.support.kafka import headers_of, keyed_records
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_accounts,
    start_geo,
    stop_service,
)

REPO = Path(__file__).resolve().parents[3]
SHIPPED_RULES = REPO / "services/geo/domain/jurisdictions/tavla-2026-12.toml"
DESCRIPTOR = REPO / "gen" / "tavla.pb"
PASSWORD = "correct horse battery"
BORN = "1990-04-21"
TOPIC = "tavla.accounts.v1"


def entry_blocking_rules(path: Path) -> Path:
    """The shipped rules, with register and login also blocked in the six US states."""
    shipped = tomllib.loads(SHIPPED_RULES.read_text())
    lines = ['version = "tests-entry-blocked"', 'source = "tests: shipped rules + entry"', ""]
    for entry in shipped["jurisdiction"]:
        purposes = list(entry["purposes"])
        if entry["code"].startswith("US-"):
            purposes = ["register", "login", *purposes]
        lines += ["[[jurisdiction]]", f'code = "{entry["code"]}"',
                  "purposes = [" + ", ".join(f'"{p}"' for p in purposes) + "]",
                  f'note = "{entry["note"]}"', ""]
    path.write_text("\n".join(lines))
    return path


@dataclass
class Stack:
    accounts: RunningService
    gateway_url: str
    database_url: str


@pytest.fixture(scope="module")
def supervisor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Supervisor]:
    with Supervisor(tmp_path_factory.mktemp("logs"), stop_timeout=3) as owner:
        yield owner


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any,
    kafka_broker: Any,
    tmp_path_factory: pytest.TempPathFactory,
    module_monkeypatch: pytest.MonkeyPatch,
    supervisor: Supervisor,
) -> AsyncIterator[Stack]:
    """Geo (entry-blocking rules) <- accounts <- Envoy trusting one proxy hop, so that a
    test plays the proxy and names the client's address in X-Forwarded-For."""
    work = tmp_path_factory.mktemp("accounts-geo")
    geo, close_geo = await start_geo(
        postgres_server.url(new_database(postgres_server, "geo")), kafka_broker.bootstrap,
        work / "dbs", rules=entry_blocking_rules(work / "rules.toml"),
    )
    module_monkeypatch.setenv("TAVLA_GEO_ADDRESS", geo.address)
    keys = ensure_signing_keys(work / "keys")
    database_url = postgres_server.url(new_database(postgres_server, "accounts"))
    accounts = await start_accounts(
        database_url, kafka_broker.bootstrap, keys.private_key_file, module_monkeypatch,
        settings=fast_settings("accounts", database_url, kafka_broker.bootstrap),
    )
    listen, admin = free_port(), free_port()
    assert accounts.settings.gateway_port is not None
    # To the gateway port over mutual TLS, as tavla dev and the chart do.
    config = render_config(descriptor=DESCRIPTOR, jwks_file=keys.jwks_file,
                           upstreams={"accounts": accounts.settings.gateway_port.port},
                           listen_port=listen, admin_port=admin, health_interval=0.2,
                           xff_num_trusted_hops=1, upstream_tls=CERTIFICATES.upstream_tls())
    gateway = EnvoyGateway(write_config(work / "envoy.json", config), listen, admin, supervisor)
    gateway.start()
    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
            for _ in range(300):
                if (await client.get("/healthz")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the gateway's /healthz never became 200")
        yield Stack(accounts, gateway.base_url, database_url)
    finally:
        gateway.stop()
        await stop_service(accounts)
        await stop_service(geo)
        close_geo()


def stub(stack: Stack) -> accounts_pb2_grpc.AccountsServiceStub:
    return accounts_pb2_grpc.AccountsServiceStub(stack.accounts.channel)


def direct(channel: grpc.aio.Channel) -> accounts_pb2_grpc.AccountsServiceStub:
    """A stub on the plain port: no gateway certificate, so no client address is believed."""
    return accounts_pb2_grpc.AccountsServiceStub(channel)


def request(residence: str, name: str | None = None) -> accounts_pb2.RegisterRequest:
    name = name or f"p{uuid.uuid4().hex[:10]}"
    return accounts_pb2.RegisterRequest(email=f"{name}@example.com", password=PASSWORD,
                                        display_name=name, residence=residence,
                                        date_of_birth=BORN)


def from_address(address: str) -> list[tuple[str, str]]:
    """What the gateway adds for a client at ``address``."""
    return [(CLIENT_ADDRESS_HEADER, address)]


async def rows(stack: Stack, query: str, **params: Any) -> list[Any]:
    engine = make_engine(stack.database_url)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(text(query), params)).all())
    finally:
        await engine.dispose()


async def registered_emails(stack: Stack) -> list[str]:
    payloads = await rows(stack, "SELECT payload FROM outbox "
                                 "WHERE ce_type = 'tavla.accounts.v1.AccountRegistered'")
    return [events_pb2.AccountRegistered.FromString(p).email for (p,) in payloads]


async def test_a_malta_resident_in_malta_registers(stack: Stack) -> None:
    account = await stub(stack).Register(request("MT"), metadata=from_address(MALTA_IP))
    assert (account.residence, account.country_code, account.date_of_birth) == ("MT", "MT", BORN)


async def test_a_montana_resident_is_refused_at_registration_and_nothing_is_created(
    stack: Stack,
) -> None:
    name = f"p{uuid.uuid4().hex[:10]}"
    with pytest.raises(grpc.aio.AioRpcError) as error:
        # Montana (US-MT), calling from Malta (MT): the residence alone refuses.
        await stub(stack).Register(request("US-MT", name), metadata=from_address(MALTA_IP))
    assert error.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    details = error.value.details() or ""
    assert "registering is not allowed" in details
    assert "Montana" in details and "[residence_restricted]" in details
    assert f"{name}@example.com" not in await registered_emails(stack)
    assert await rows(stack, "SELECT 1 FROM accounts WHERE display_name = :n", n=name) == []
    # The same person living in Malta may: email and name were never taken.
    account = await stub(stack).Register(request("MT", name), metadata=from_address(MALTA_IP))
    assert account.display_name == name


async def test_a_registration_from_a_florida_address_is_refused_through_the_gateway(
    stack: Stack,
) -> None:
    name = f"p{uuid.uuid4().hex[:10]}"
    body = {"email": f"{name}@example.com", "password": PASSWORD, "displayName": name,
            "residence": "MT", "dateOfBirth": BORN}
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=10) as client:
        # The proxy in front (one trusted hop) says the client is in Florida; a client's
        # own claim to be in Malta, in either header, changes nothing.
        refused = await client.post("/v1/accounts", json=body, headers={
            "x-forwarded-for": f"{MALTA_IP}, {FLORIDA_IP}", CLIENT_ADDRESS_HEADER: MALTA_IP})
    assert refused.status_code == 400, refused.text
    assert "[location_restricted]" in refused.json()["message"]
    assert "Florida" in refused.json()["message"]
    assert f"{name}@example.com" not in await registered_emails(stack)


async def test_a_login_records_and_publishes_the_device_and_address_the_gateway_saw(
    stack: Stack, kafka_broker: Any
) -> None:
    name = f"p{uuid.uuid4().hex[:10]}"
    email = f"{name}@example.com"
    body = {"email": email, "password": PASSWORD, "displayName": name,
            "residence": "us-nj", "dateOfBirth": BORN}
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=10) as client:
        proxy = {"x-forwarded-for": MALTA_IP}
        created = await client.post("/v1/accounts", json=body, headers=proxy)
        assert created.status_code == 200, created.text
        account_id = created.json()["accountId"]
        login = await client.post("/v1/sessions", json={"email": email, "password": PASSWORD},
                                  headers={"x-forwarded-for": f"{FLORIDA_IP}, {MALTA_IP}",
                                           CLIENT_ADDRESS_HEADER: FLORIDA_IP,
                                           DEVICE_ID_HEADER: "phone-7"})
        assert login.status_code == 200, login.text
        token = login.json()["accessToken"]
        mine = await client.get(f"/v1/accounts/{account_id}",
                                headers={"authorization": f"Bearer {token}"})
    # The owner sees where they live and when they were born.
    assert (mine.json()["residence"], mine.json()["dateOfBirth"]) == ("US-NJ", BORN)

    # The token carries the residence, as every service verifies and reads it.
    jwks = await stub(stack).GetJwks(accounts_pb2.GetJwksRequest())
    keys = StaticKeys({k.kid: key_from_jwk({"kty": k.kty, "crv": k.crv, "x": k.x, "y": k.y})
                       for k in jwks.keys})
    player = await PlayerTokenVerifier(keys).player(token)
    assert (player.account_id, player.residence) == (account_id, "US-NJ")

    (session,) = await rows(stack, "SELECT family_id, client_address, device_id, created_at "
                                   "FROM sessions WHERE account_id = :a", a=account_id)
    assert (session.client_address, session.device_id) == (MALTA_IP, "phone-7")

    event = await logged_in(kafka_broker.bootstrap, account_id)
    assert (event.ip_address, event.device_id, event.session_id) == (
        MALTA_IP, "phone-7", session.family_id)
    assert (event.country, event.region) == ("MT", "")
    assert event.occurred_at.ToDatetime().replace(tzinfo=session.created_at.tzinfo) == \
        session.created_at


async def test_a_login_from_a_blocked_place_opens_no_session_and_publishes_nothing(
    stack: Stack,
) -> None:
    account = await stub(stack).Register(request("MT"), metadata=from_address(MALTA_IP))
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await stub(stack).Login(
            accounts_pb2.LoginRequest(email=account.email, password=PASSWORD),
            metadata=[*from_address(FLORIDA_IP), (DEVICE_ID_HEADER, "laptop-1")],
        )
    assert error.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert "logging in is not allowed" in (error.value.details() or "")
    assert "[location_restricted]" in (error.value.details() or "")
    assert await rows(stack, "SELECT 1 FROM sessions WHERE account_id = :a",
                      a=account.account_id) == []
    assert await rows(stack, "SELECT 1 FROM outbox WHERE key = :a AND "
                             "ce_type = 'tavla.accounts.v1.LoggedIn'", a=account.account_id) == []
    # From Malta it works, and is recorded.
    await stub(stack).Login(accounts_pb2.LoginRequest(email=account.email, password=PASSWORD),
                            metadata=from_address(MALTA_IP))
    assert len(await rows(stack, "SELECT 1 FROM sessions WHERE account_id = :a",
                          a=account.account_id)) == 1


async def test_a_refresh_records_where_it_came_from_without_a_new_login(stack: Stack) -> None:
    account = await stub(stack).Register(request("MT"), metadata=from_address(MALTA_IP))
    login = await stub(stack).Login(
        accounts_pb2.LoginRequest(email=account.email, password=PASSWORD),
        metadata=[*from_address(MALTA_IP), (DEVICE_ID_HEADER, "phone-1")])
    refreshed = await stub(stack).RefreshSession(
        accounts_pb2.RefreshSessionRequest(refresh_token=login.refresh_token),
        metadata=[*from_address("2001:db8:2::5"), (DEVICE_ID_HEADER, "phone-1")])
    assert jwt.decode(refreshed.access_token,
                      options={"verify_signature": False})["residence"] == "MT"
    tokens = await rows(stack, "SELECT t.client_address, t.device_id FROM refresh_tokens t "
                               "JOIN sessions s USING (family_id) WHERE s.account_id = :a "
                               "ORDER BY t.issued_at", a=account.account_id)
    assert [tuple(t) for t in tokens] == [(MALTA_IP, "phone-1"), ("2001:db8:2::5", "phone-1")]
    # Still one session and one LoggedIn: a refresh is the session going on.
    published = await rows(stack, "SELECT 1 FROM outbox WHERE key = :a AND "
                                  "ce_type = 'tavla.accounts.v1.LoggedIn'", a=account.account_id)
    assert len(published) == 1


async def logged_in(bootstrap: str, account_id: str) -> events_pb2.LoggedIn:
    def logged_in_last(found: list[Any]) -> bool:
        return headers_of(found[-1])["ce_type"] == "tavla.accounts.v1.LoggedIn"

    records = await keyed_records(bootstrap, TOPIC, account_id, logged_in_last, timeout=30)
    return events_pb2.LoggedIn.FromString(records[-1].value)


async def test_a_sanctioned_residence_is_refused_straight_to_the_port_without_an_address(
    stack: Stack,
) -> None:
    """Register and login straight to the plain port with no address: the declared
    residence alone refuses an Iranian resident."""
    name = f"p{uuid.uuid4().hex[:10]}"
    async with bare_channel(stack.accounts.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await direct(channel).Register(request("IR", name))
        assert error.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "[residence_restricted]" in (error.value.details() or "")
        assert await rows(stack, "SELECT 1 FROM accounts WHERE display_name = :n", n=name) == []
        # An account whose residence is Iran (written here: registration refuses it) cannot
        # log in straight to the port either; the same account living in Malta can.
        account = await stub(stack).Register(request("MT", name), metadata=from_address(MALTA_IP))
        login = accounts_pb2.LoginRequest(email=account.email, password=PASSWORD)
        assert (await direct(channel).Login(login)).access_token
        await _set_residence(stack, account.account_id, "IR")
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await direct(channel).Login(login)
        assert error.value.code() is grpc.StatusCode.FAILED_PRECONDITION
        assert "[residence_restricted]" in (error.value.details() or "")


async def _set_residence(stack: Stack, account_id: str, residence: str) -> None:
    engine = make_engine(stack.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("UPDATE accounts SET residence = :r WHERE account_id = :a"),
                {"r": residence, "a": account_id},
            )
    finally:
        await engine.dispose()
