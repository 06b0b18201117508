"""Wiring for the antiabuse service: settings -> unit of work -> use cases -> servicer,
the facts consumer that feeds the detectors (group ``antiabuse.facts``), and the
policy consumer of the service's own alerts (group ``antiabuse.policy``: automatic freezes)."""

from __future__ import annotations

from functools import partial

from services.antiabuse.alerting import ALERTS_TOPIC, windows_from_env
from services.antiabuse.api import AntiAbuseApi
from services.antiabuse.cases.policy import POLICY_GROUP, AutoPolicy, policy_consumer
from services.antiabuse.cases.service import CaseService
from services.antiabuse.cases.store import CasesUnitOfWork
from services.antiabuse.consumers import FACTS_GROUP, TOPICS, facts_consumer
from services.antiabuse.service import AntiAbuseService, AntiAbuseUnitOfWork
from services.kit.config import Settings
from services.kit.events.kafka import make_consumer
from services.kit.server import Runtime, Wiring, run_service
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc


def wiring(runtime: Runtime) -> Wiring:
    unit_of_work = partial(
        AntiAbuseUnitOfWork,
        runtime.sessions,
        source=runtime.settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    )
    settings = runtime.settings
    facts = facts_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            settings.kafka,
            group=FACTS_GROUP,
            topics=list(TOPICS),
            session_timeout_ms=settings.kafka_session_timeout_ms,
        ),
        clock=runtime.clock,
        service=settings.service,
        windows=windows_from_env(),
    )
    policy = policy_consumer(
        sessions=runtime.sessions,
        consumer_factory=lambda: make_consumer(
            settings.kafka,
            group=POLICY_GROUP,
            topics=[ALERTS_TOPIC],
            session_timeout_ms=settings.kafka_session_timeout_ms,
        ),
        policy=AutoPolicy.from_env(),
        clock=runtime.clock,
        service=settings.service,
    )
    cases = CaseService(partial(
        CasesUnitOfWork,
        runtime.sessions,
        source=settings.service,
        clock=runtime.clock,
        on_commit=runtime.relay.wake,
    ))
    servicer = AntiAbuseApi(AntiAbuseService(unit_of_work), cases)
    return Wiring(
        servicers=[(antiabuse_pb2_grpc.add_AntiAbuseServiceServicer_to_server, servicer)],
        service_names=[antiabuse_pb2.DESCRIPTOR.services_by_name["AntiAbuseService"].full_name],
        consumers=[facts, policy],
    )


async def serve(settings: Settings) -> None:
    AutoPolicy.from_env()  # a wrong policy or window fails before migrating
    windows_from_env()
    await run_service(settings, wiring)
