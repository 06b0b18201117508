"""A kit consumer without a database, for tests of the consumer's broker side (its
fetches, readiness, its backlog metric): nothing is parked or replayed, and its one
handler is never called (nothing reaches it, or the test overrides ``apply``)."""

from __future__ import annotations

from typing import Any

from services.kit.clock import SystemClock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from tests.support.kafka import event_verifier

EVENT_TYPE = "test.Event"


class NoDatabaseConsumer(EventConsumer):
    """``service``.``name`` reading ``topic`` (its events signed by the game service's
    key) with ``consumer_factory``; ``options``: the kit consumer's others (batch size)."""

    def __init__(
        self, service: str, name: str, topic: str, consumer_factory: ConsumerFactory,
        **options: Any,
    ) -> None:
        super().__init__(
            service=service,
            name=name,
            sessions=Any,  # type: ignore[arg-type]
            consumer_factory=consumer_factory,
            handlers={EVENT_TYPE: self._unused},
            clock=SystemClock(),
            verifier=event_verifier({topic: frozenset({"game"})}),
            **options,
        )

    @staticmethod
    async def _unused(session: Any, event: ReceivedEvent) -> None:
        raise AssertionError("no event reaches this consumer's handler")

    async def refresh_parked(self) -> None:
        """No database, and nothing parked."""

    async def serve_replays(self) -> int:
        return 0
