"""Run one service: config -> logs -> database -> migrations -> relay -> gRPC server.

``run_service`` is the whole life of a service process. It serves the standard
health service (overall status SERVING only while the database and the broker
are reachable), reflection (when ``TAVLA_GRPC_REFLECTION`` is on) and /metrics
(with the pauses of its event loop: :mod:`services.kit.loop_watch`),
lets each call in only with the credential its method declares
(:mod:`services.kit.authn`) and direct callers only within the gateway's rate
limits (:mod:`services.kit.rate_limits`), and on SIGTERM or SIGINT it stops
accepting calls, drains in-flight ones up to the grace period, flushes the
outbox and exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from services.kit import logging as kit_logging
from services.kit.authn import Admission, Authenticator, access_table
from services.kit.clock import Clock, SystemClock
from services.kit.config import Settings
from services.kit.credentials import (
    ServiceCredentials,
    load_service_credentials,
    player_verification,
)
from services.kit.db import database_reachable, make_engine
from services.kit.events.consumer import EventConsumer
from services.kit.events.relay import OutboxRelay
from services.kit.events.relay_process import RelayProcess, outbox_relay
from services.kit.events.signing import EventVerifier
from services.kit.interceptors import CallInterceptor
from services.kit.loop_watch import GcPauses, watch_loop_lag
from services.kit.metrics import READY, serve_metrics
from services.kit.migrate import upgrade_async
from services.kit.player_tokens import KeySource
from services.kit.rate_limits import DirectCallLimiter
from services.kit.service_tokens import ServiceTokenMinter

log = kit_logging.get_logger(__name__)

# Liveness asks only "is the process answering?": a pod must not be restarted
# because its database is away (readiness, the overall status, covers that).
LIVENESS = "tavla.liveness"
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
KEYS_LOOK_SECONDS = 0.05  # how often readiness looks whether missing keys arrived (no I/O)


@dataclass
class Runtime:
    """What a service's wiring gets: shared resources, built once per process."""

    settings: Settings
    clock: Clock
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    # In this process, or its stand-in that runs it in a child (settings.outbox_relay_process).
    relay: OutboxRelay | RelayProcess
    # Signs this service's calls to others: pass it to services.kit.client.service_channel.
    credentials: ServiceTokenMinter
    # Proves the producers of consumed events; run_service gives it to every consumer.
    event_verifier: EventVerifier


AddServicer = Callable[[Any, grpc.aio.Server], None]


@dataclass
class Wiring:
    """What a service contributes: its servicers, consumers and background loops."""

    servicers: Sequence[tuple[AddServicer, object]] = ()
    service_names: Sequence[str] = ()
    consumers: Sequence[EventConsumer] = ()
    background: Sequence[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)
    # The keys that verify access tokens, when the service has its own (accounts);
    # otherwise they come from the accounts service's JWKS.
    player_keys: KeySource | None = None
    # Run once the server has stopped and its calls have drained (resources they used).
    on_stop: Sequence[Callable[[], Coroutine[Any, Any, None]]] = ()


Wire = Callable[[Runtime], Wiring]


def build_runtime(
    settings: Settings, credentials: ServiceCredentials, clock: Clock | None = None
) -> Runtime:
    clock = clock or SystemClock()
    engine = make_engine(settings.database_url)
    relay: OutboxRelay | RelayProcess = (
        RelayProcess(settings)
        if settings.outbox_relay_process
        else outbox_relay(settings, engine, credentials.event_signer, clock)
    )
    return Runtime(
        settings=settings,
        clock=clock,
        engine=engine,
        sessions=async_sessionmaker(engine, expire_on_commit=False),
        relay=relay,
        credentials=credentials.minter,
        event_verifier=credentials.event_verifier,
    )


async def broker_reachable(bootstrap: str) -> bool:
    """A TCP connection to the first reachable bootstrap server answers within a second."""
    for server in bootstrap.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            async with asyncio.timeout(1.0):
                _, writer = await asyncio.open_connection(host or "127.0.0.1", int(port))
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            return True
        except (OSError, TimeoutError, ValueError):
            continue
    return False


class Readiness:
    """Keeps the health service's status in step with the database, the broker and,
    where players call, the keys that verify their tokens.

    A process that has never fetched the accounts service's JWKS would refuse every
    player, so it is not ready until it has them once; after that it keeps serving
    on the keys it holds while the accounts service is away.

    The broker is proven by ``broker_answered(seconds)`` when the process's consumers
    had a fetch answered within the last interval (:meth:`EventConsumer.broker_answered_within`),
    and only otherwise by a connection of its own (:func:`broker_reachable`): every
    process checks every two seconds, and a connection opened and closed for it is work
    for the process and the broker each time, while the consumers talk to the broker all
    the time anyway. The broker away stops the fetches' answers, so it is seen at most one
    interval later than by the connection alone.
    """

    def __init__(
        self,
        runtime: Runtime,
        health: HealthServicer,
        names: Sequence[str],
        keys_ready: Callable[[], bool] = lambda: True,
        broker_answered: Callable[[float], bool] = lambda seconds: False,
    ) -> None:
        self._runtime = runtime
        self._health = health
        self._names = ["", *names]
        self._keys_ready = keys_ready
        self._broker_answered = broker_answered
        self.serving: bool | None = None

    async def check_once(self) -> bool:
        ok = (
            self._keys_ready()
            and await database_reachable(self._runtime.engine)
            and await self._broker_ready()
        )
        if ok != self.serving:
            self.serving = ok
            log.info("readiness_changed", serving=ok)
            READY.labels(self._runtime.settings.service).set(1 if ok else 0)
            for name in self._names:
                await self._health.set(name, SERVING if ok else NOT_SERVING)
        return ok

    async def _broker_ready(self) -> bool:
        interval = self._runtime.settings.readiness_interval_seconds
        if self._broker_answered(interval):
            return True
        return await broker_reachable(self._runtime.settings.kafka_bootstrap)

    async def run(self) -> None:
        while True:
            await self.check_once()
            await self._pause()

    async def _pause(self) -> None:
        """The readiness interval, cut short once the keys arrive while they are missing: a
        starting process fetches them just after its first check (or once the accounts
        service, starting too, answers), and serves at once instead of a whole interval
        (2 s by default) later."""
        loop = asyncio.get_running_loop()
        until = loop.time() + self._runtime.settings.readiness_interval_seconds
        if self._keys_ready():
            await asyncio.sleep(until - loop.time())
            return
        while not self._keys_ready():
            left = until - loop.time()
            if left <= 0:
                return
            await asyncio.sleep(min(KEYS_LOOK_SECONDS, left))


async def run_service(
    settings: Settings,
    wire: Wire,
    *,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
    migrate: bool = True,
) -> None:
    """Serve until SIGTERM/SIGINT (or ``stop`` is set, for tests), then shut down gracefully."""
    kit_logging.configure(settings.service, settings.log_level)
    credentials = load_service_credentials(settings)  # a missing key stops us before migrating
    if migrate:
        await upgrade_async(settings.service, settings.database_url)
    runtime = build_runtime(settings, credentials, clock)
    wiring = wire(runtime)
    for consumer in wiring.consumers:  # no consumer applies an event whose producer is unproven
        if consumer.verifier is None:
            consumer.trust(runtime.event_verifier)
    table = access_table(wiring.service_names)
    players = player_verification(settings, table, wiring.player_keys, credentials.minter)
    serve_metrics(settings.metrics_port, settings.metrics_bind)
    admission = Admission(table, Authenticator(players.verifier, credentials.verifier))
    server, health = _grpc_server(settings, wiring, admission)

    await health.set(LIVENESS, SERVING)
    readiness = Readiness(
        runtime, health, wiring.service_names, keys_ready=players.ready,
        broker_answered=lambda seconds: any(
            consumer.broker_answered_within(seconds) for consumer in wiring.consumers
        ),
    )  # fmt: skip
    await readiness.check_once()
    await server.start()
    tune_garbage_collector()
    gc_pauses = GcPauses(settings.service)
    gc_pauses.install()
    log.info("service_started", grpc_port=settings.grpc_port, metrics_port=settings.metrics_port,
             gateway_port=settings.gateway_port.port if settings.gateway_port else None)
    if settings.gateway_port is None:
        log.warning("no_gateway_port", variable="TAVLA_GATEWAY_PORT",
                    effect="no client address is believed: real money is refused")

    tasks = [
        asyncio.create_task(readiness.run(), name="readiness"),
        asyncio.create_task(watch_loop_lag(settings.service), name="loop-lag"),
        asyncio.create_task(runtime.relay.run(), name="outbox-relay"),
        *(asyncio.create_task(c.run(), name=c.name) for c in wiring.consumers),
        *(asyncio.create_task(loop(), name="background") for loop in wiring.background),
        *([asyncio.create_task(players.jwks.run(), name="jwks")] if players.jwks else []),
    ]
    if stop is None:
        stop = asyncio.Event()
        _install_signal_handlers(stop)
    await stop.wait()

    log.info("service_stopping", grace_seconds=settings.shutdown_grace_seconds)
    await health.enter_graceful_shutdown()
    await server.stop(settings.shutdown_grace_seconds)
    for consumer in wiring.consumers:
        consumer.stop()
    for task in tasks:
        task.cancel()
    await wait_cancelled(tasks, settings.shutdown_grace_seconds)
    for close in wiring.on_stop:
        await close()
    await runtime.relay.stop(drain_seconds=settings.shutdown_grace_seconds)
    await players.close()
    await runtime.engine.dispose()
    gc_pauses.remove()
    log.info("service_stopped")


def _grpc_server(
    settings: Settings, wiring: Wiring, admission: Admission
) -> tuple[grpc.aio.Server, HealthServicer]:
    """The server with its servicers, health, optional reflection, listening on the bind address.

    One interceptor does the kit's part of every call (services/kit/interceptors.py):
    observability first, so that refused calls are logged and counted; then the limits
    on direct calls of login, registration and refresh (rate_limits.py), the caller's
    credential (authn.py), and the request's texts once its caller is admitted
    (request_text.py).
    """
    interceptor = CallInterceptor(
        settings.service, admission, DirectCallLimiter(), slow_rpc_ms=settings.log_slow_rpc_ms
    )
    server = grpc.aio.server(interceptors=[interceptor])
    for add, servicer in wiring.servicers:
        add(servicer, server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    if settings.grpc_reflection:
        reflection.enable_server_reflection(
            [
                *wiring.service_names,
                health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
                reflection.SERVICE_NAME,
            ],
            server,
        )
    _listen(server, f"{settings.grpc_bind}:{settings.grpc_port}")
    if settings.gateway_port is not None:  # the gateway's own, mutual TLS (kit/gateway_tls.py)
        _listen(server, f"{settings.grpc_bind}:{settings.gateway_port.port}",
                settings.gateway_port.server_credentials())
    return server, health


def _listen(
    server: grpc.aio.Server, address: str, credentials: grpc.ServerCredentials | None = None
) -> None:
    """Bind ``address``, or fail with one message whatever grpcio's version does.

    Older grpcio returns port 0, newer raises RuntimeError. The message says "already in
    use" so that a stack started on shifted ports (``tavla dev``'s callers) knows to try
    other ones: a free port can be taken between the check and the bind, by any process's
    outgoing connection, since the dev ports lie in the ephemeral range.
    """
    try:
        if credentials is None:
            bound = server.add_insecure_port(address)
        else:
            bound = server.add_secure_port(address, credentials)
    except RuntimeError:
        bound = 0
    if bound == 0:
        raise OSError(f"cannot listen on {address}: the port is already in use")


async def wait_cancelled(tasks: Sequence[asyncio.Task[Any]], seconds: float) -> list[str]:
    """Give cancelled background tasks ``seconds`` to finish; name those that do not.

    A task still running then is logged with what it is waiting on and left behind,
    so that a stuck loop cannot hold the shutdown (and the outbox flush) for ever.
    """
    if not tasks:
        return []
    _, stuck = await asyncio.wait(tasks, timeout=max(seconds, 1.0))
    names = []
    for task in stuck:
        names.append(task.get_name())
        log.error("shutdown_task_stuck", task=task.get_name(), awaiting=_awaiting(task))
    return names


def _awaiting(task: asyncio.Task[Any]) -> str:
    """The chain of coroutines a task is suspended in, innermost last."""
    chain = []
    awaited: Any = task.get_coro()
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None)
        if frame is not None:
            chain.append(f"{frame.f_code.co_qualname}:{frame.f_lineno}")
        awaited = getattr(awaited, "cr_await", None)
    return " > ".join(chain)


def tune_garbage_collector() -> None:
    """Fewer, cheaper cyclic collections for a long-running server.

    What start-up allocated (modules, descriptors, pools) is frozen out of every
    later collection, and the youngest generation collects after 10,000 net
    allocations instead of 700. With CPython's defaults the collector took about a
    fifth of the game service's own CPU time per command (measured in-process).
    """
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


def _install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
