"""Wiring for the tournaments service: settings -> unit of work -> use cases, driver -> servicer.

Service-specific settings: ``TAVLA_WALLET_ADDRESS`` and ``TAVLA_GAME_ADDRESS``
(required: registration holds money and play creates games; without them the
service refuses to start, naming the variable), ``TAVLA_GEO_ADDRESS`` (the geo
service; unset, real-money registration is refused and play money goes on, see
:mod:`services.kit.geo_gate`), ``TAVLA_TOURNAMENTS_DRIVE_SECONDS`` (how often the
driver looks for work nobody woke it for, such as another replica's change it missed; default
30: what gives it work wakes it, and it sleeps until the next registration close or start),
``TAVLA_TOURNAMENTS_RELAY_IDLE_SECONDS`` (how often the outbox relay looks for unsent events
while no commit woke it; default 10: every write of this service's outbox wakes it),
and the kit's ``TAVLA_MONEY_MAX_ADDED_PRIZE_<CUR>`` (the most house money a tournament's
pool may be given, checked at creation as the wallet checks it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from services.kit.config import Env, Settings
from services.kit.events.consumer import EventConsumer
from services.kit.events.kafka import make_consumer
from services.kit.geo_gate import GeoGate
from services.kit.money_bounds import MoneyBounds
from services.kit.remote import GrpcGames
from services.kit.self_exclusion import ACCOUNTS_TOPIC, consumer_group
from services.kit.server import Runtime, Wiring, run_service
from services.tournaments.api import TournamentsApi
from services.tournaments.consumers import (
    GAME_TOPIC,
    MATCHES_GROUP,
    exclusions_consumer,
    matches_consumer,
)
from services.tournaments.driver import Driver
from services.tournaments.ports import GrpcWallet
from services.tournaments.service import Tournaments
from services.tournaments.store import (
    ReadingUnitOfWork,
    TournamentCache,
    TournamentsUnitOfWork,
    reading_sessions,
)
from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc


@dataclass(frozen=True)
class TournamentsSettings:
    wallet_address: str
    game_address: str
    drive_seconds: float = 30.0
    relay_idle_seconds: float = 10.0
    # How long the consumers' fetches gather events (one is seen up to this late).
    gather_seconds: float = 1.0
    # None: read TAVLA_GEO_ADDRESS from the process environment (GeoGate.from_env).
    geo_environ: Mapping[str, str] | None = None
    # The operator's maximum amounts (TAVLA_MONEY_MAX_*): here, the added prize's.
    money_bounds: MoneyBounds = field(default_factory=MoneyBounds.defaults)

    @classmethod
    def from_env(cls, env: Env | None = None) -> TournamentsSettings:
        env = env or Env()
        return cls(
            wallet_address=env.address("TAVLA_WALLET_ADDRESS", needed_to="hold buy-ins and fees"),
            game_address=env.address("TAVLA_GAME_ADDRESS", needed_to="create the matches' games"),
            drive_seconds=env.number("TAVLA_TOURNAMENTS_DRIVE_SECONDS", 30.0, low=0.05, high=60.0),
            relay_idle_seconds=env.number(
                "TAVLA_TOURNAMENTS_RELAY_IDLE_SECONDS", 10.0, low=0.05, high=60.0
            ),
            gather_seconds=env.number(
                "TAVLA_TOURNAMENTS_GATHER_SECONDS", 1.0, low=0.01, high=10.0
            ),
            money_bounds=MoneyBounds.from_env(env),
        )


def wiring(runtime: Runtime, settings: TournamentsSettings) -> Wiring:
    cache = TournamentCache()  # the process's: its use cases, driver and consumer share it
    # Every outbox write here wakes the relay after its commit: the units of work below and
    # the results consumer (``decided``), so an idle relay need not poll twice a second.
    runtime.relay.poll_idle_every(settings.relay_idle_seconds)
    unit_of_work = partial(
        TournamentsUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
        cache=cache,
    )
    reads = partial(
        ReadingUnitOfWork,
        reading_sessions(runtime.engine),
        source=runtime.settings.service,
        clock=runtime.clock,
        cache=cache,
    )
    wallet = GrpcWallet(settings.wallet_address, runtime.credentials)
    games = GrpcGames(settings.game_address, runtime.credentials)
    geo = GeoGate.from_env(runtime.credentials, settings.geo_environ)
    driver = Driver(
        unit_of_work,
        reads=reads,
        wallet=wallet,
        games=games,
        clock=runtime.clock,
    )
    tournaments = Tournaments(
        unit_of_work,
        wallet=wallet,
        geo=geo,
        clock=runtime.clock,
        wake=driver.wake,
        bounds=settings.money_bounds,
        reads=reads,
    )
    kafka = runtime.settings.kafka
    session_timeout_ms = runtime.settings.kafka_session_timeout_ms

    # Each fetch waits for a full one or ``gather_seconds``: the game topic brings every
    # game event, about a hundred a match, for its results; the accounts topic is quiet.
    gather_ms = round(settings.gather_seconds * 1000)

    def consumer(build: Callable[..., EventConsumer], group: str, topic: str) -> EventConsumer:
        return build(
            sessions=runtime.sessions,
            consumer_factory=lambda: make_consumer(
                kafka,
                group=group,
                topics=[topic],
                session_timeout_ms=session_timeout_ms,
                gather_ms=gather_ms,
            ),
            clock=runtime.clock,
            service=runtime.settings.service,
        )

    def decided() -> None:  # a match decided: its MatchDecided to publish, a next match
        runtime.relay.wake()
        driver.wake()

    results = consumer(
        partial(matches_consumer, cache=cache, on_commit=runtime.relay.wake, on_work=decided),
        MATCHES_GROUP,
        GAME_TOPIC,
    )
    exclusions = consumer(exclusions_consumer, consumer_group("tournaments"), ACCOUNTS_TOPIC)
    return Wiring(
        servicers=[
            (tournaments_pb2_grpc.add_TournamentsServiceServicer_to_server,
             TournamentsApi(tournaments))
        ],
        service_names=[
            tournaments_pb2.DESCRIPTOR.services_by_name["TournamentsService"].full_name
        ],
        consumers=[results, exclusions],
        background=[partial(driver.run, settings.drive_seconds)],
        on_stop=[geo.close, wallet.close, games.close],
    )


async def serve(settings: Settings) -> None:
    # Before migrating: a missing wallet or game address stops the process, naming it.
    tournaments = TournamentsSettings.from_env()
    await run_service(settings, lambda runtime: wiring(runtime, tournaments))
