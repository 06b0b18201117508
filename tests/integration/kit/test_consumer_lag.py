"""The consumer backlog metric, ``tavla_consumer_lag``, on the real broker.

Ten records wait on a topic of one partition; a consumer fetching four at a time
applies none until the test lets it. While it holds its first batch the backlog
is all ten (the four in hand are not applied yet); once everything is applied
and committed it is 0. Before this metric the kit had only counters of events
consumed, which cannot say how far behind a group is.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiokafka import AIOKafkaProducer

from services.kit.devstack.broker import TopicSpec, create_topics_async
from services.kit.events.connection import KafkaConnection
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.kafka import make_consumer
from services.kit.events.signing import SIGNATURE_HEADER
from tests.support.consumers import NoDatabaseConsumer
from tests.support.kafka import event_signer

PUBLISHED = 10


class Held(NoDatabaseConsumer):
    """Applies nothing until ``release`` is set (the metric is the point)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        group = f"lag-{uuid.uuid4().hex[:6]}"
        super().__init__(
            "lagtest",
            "held",
            topic,
            lambda: make_consumer(KafkaConnection(bootstrap), group=group, topics=[topic]),
            batch_size=4,
        )
        self.release = asyncio.Event()
        self.fetched = asyncio.Event()
        self.applied = 0

    async def apply(self, event: ReceivedEvent) -> bool:
        self.fetched.set()
        await self.release.wait()
        self.applied += 1
        return True


def lag(topic: str) -> float | None:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(
        "tavla_consumer_lag", {"service": "lagtest", "consumer": "lagtest.held", "topic": topic}
    )


async def eventually(check: Any, what: str, timeout: float = 30.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)
    assert check(), what


async def test_the_backlog_is_what_the_group_has_not_applied(kafka_broker: Any) -> None:
    topic = f"tavla.lagtest.{uuid.uuid4().hex[:8]}"
    await create_topics_async(kafka_broker.bootstrap, [TopicSpec(topic, 1)])
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker.bootstrap, acks="all")
    await producer.start()
    try:
        for number in range(PUBLISHED):
            key = f"k{number}"
            headers = {"ce_id": f"{topic}-{number}", "ce_type": "test.Event",
                       "ce_source": "//tavla/game"}
            headers[SIGNATURE_HEADER] = event_signer("game").sign(topic, key, b"", headers)
            await producer.send_and_wait(topic, b"", key=key.encode(), headers=[
                (name, value.encode()) for name, value in headers.items()
            ])
    finally:
        await producer.stop()

    consumer = Held(kafka_broker.bootstrap, topic)
    running = asyncio.create_task(consumer.run())
    try:
        await asyncio.wait_for(consumer.fetched.wait(), 60)
        assert lag(topic) == PUBLISHED  # nothing applied: four in hand, six on the broker
        consumer.release.set()
        await eventually(lambda: consumer.applied == PUBLISHED and lag(topic) == 0,
                         "the backlog back at 0 once all ten are applied")
    finally:
        consumer.stop()
        consumer.release.set()
        await asyncio.wait_for(running, 30)
