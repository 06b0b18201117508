"""An idle consumer on a broker of its own: what readiness learns from it, and how often
its fetch task wakes.

Readiness takes a fetch the broker answered within the interval as proof that the broker
serves the process (:meth:`EventConsumer.broker_answered_within`) instead of opening a
connection of its own every two seconds; with the broker gone that proof must lapse, so
that readiness asks the broker itself and finds it away. aiokafka's background fetch task
woke every 200 ms whatever happened; the kit's consumers let it sleep up to a second,
since everything that gives it work wakes it.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from services.kit.devstack.broker import KafkaBroker, TopicSpec
from services.kit.devstack.supervisor import Supervisor
from services.kit.events.connection import KafkaConnection
from services.kit.events.kafka import make_consumer
from services.kit.server import broker_reachable
from tests.support.consumers import NoDatabaseConsumer
from tests.support.services import free_port

TOPIC = "answers.test.v1"


class Idle(NoDatabaseConsumer):
    """A consumer of a quiet topic, gathering as tournaments' consumers do."""

    def __init__(self, bootstrap: str) -> None:
        group = f"answers-{uuid.uuid4().hex[:6]}"
        super().__init__(
            "answers",
            "idle",
            TOPIC,
            lambda: make_consumer(
                KafkaConnection(bootstrap), group=group, topics=[TOPIC], gather_ms=1000
            ),
        )


async def eventually(check: Any, what: str, timeout: float = 30.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(what) from None


async def test_an_idle_consumer_proves_the_broker_until_it_goes_and_wakes_about_once_a_second(
    tmp_path: Path,
) -> None:
    supervisor = Supervisor(tmp_path / "logs")
    broker = KafkaBroker(free_port(), supervisor, name="answers-broker")
    broker.start()
    consumer = Idle(broker.bootstrap)
    task: asyncio.Task[None] | None = None
    try:
        broker.create_topics([TopicSpec(TOPIC, 1)])
        assert not consumer.broker_answered_within(2.0), "not started: no proof"
        task = asyncio.create_task(consumer.run())
        await eventually(lambda: consumer.broker_answered_within(2.0), "no fetch was answered")

        # The fetch task's wakes while nothing happens: each pass decides what to fetch.
        fetcher = consumer._client._fetcher  # type: ignore[union-attr]
        passes: list[int] = []
        decide = fetcher._get_actions_per_node

        def counted(assignment: Any) -> Any:
            passes.append(1)
            return decide(assignment)

        fetcher._get_actions_per_node = counted
        await asyncio.sleep(5.0)
        # A fetch held up to 1 s by the broker and the 1 s fallback: about two a second at
        # most; with aiokafka's 200 ms fallback it was over five.
        assert len(passes) <= 12, f"{len(passes)} passes in 5 s of nothing"
        assert consumer.broker_answered_within(2.0), "an idle consumer keeps fetching"

        broker.stop()
        await eventually(
            lambda: not consumer.broker_answered_within(2.0),
            "the broker is gone but the consumer still proves it",
            timeout=15.0,
        )
        assert not await broker_reachable(broker.bootstrap)  # what readiness then asks
    finally:
        consumer.stop()
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        supervisor.stop_all()
