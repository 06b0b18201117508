"""Reading the compliance stream as the compliance team does: ``tavla.compliance.alerts.v1``.

The one thing the demo reads without the gateway, because it is the compliance
team's interface: the anti-abuse service's alerts as events on the broker,
decoded the way ``tavla events tail`` decodes them (``services/kit/events/tail.py``),
read as no consumer group, from the topic's beginning, until an alert matches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from services.kit.events.tail import line_of

ALERTS_TOPIC = "tavla.compliance.alerts.v1"


async def first_alert(bootstrap: str, wanted: Callable[[dict[str, Any]], bool],
                      seconds: float) -> dict[str, Any] | None:
    """The first decoded alert ``wanted`` accepts, or None after ``seconds``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()  # fetches the partitions' metadata
        partitions = [TopicPartition(ALERTS_TOPIC, n)
                      for n in sorted(consumer.partitions_for_topic(ALERTS_TOPIC) or ())]
        if not partitions:
            raise ValueError(f"the broker at {bootstrap} has no topic {ALERTS_TOPIC}")
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                for record in batch:
                    line = line_of(record)
                    if line.get("event") and wanted(line["event"]):
                        return line
        return None
    finally:
        await consumer.stop()


def wait_for_alert(bootstrap: str, wanted: Callable[[dict[str, Any]], bool],
                   timeout: float = 120.0) -> dict[str, Any] | None:
    return asyncio.run(first_alert(bootstrap, wanted, timeout))
