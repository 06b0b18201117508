"""A fetched batch: one key's events in order, different keys concurrently, all or retry."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.kit.clock import SystemClock
from services.kit.events.consumer import EventConsumer
from services.kit.events.envelope import ReceivedEvent


def event(key: str, number: int) -> ReceivedEvent:
    return ReceivedEvent(
        event_id=f"{key}-{number}",
        ce_type="test.Event",
        source="//tavla/test",
        topic="tavla.test.v1",
        key=key,
        payload=b"",
        headers={},
    )


class Recording(EventConsumer):
    """Records the order of applications and how many ran at once; no database."""

    def __init__(self, fail_on: str = "") -> None:
        super().__init__(
            service="test",
            name="batches",
            sessions=Any,  # type: ignore[arg-type]
            consumer_factory=lambda: (_ for _ in ()).throw(AssertionError("no broker")),
            handlers={},
            clock=SystemClock(),
        )
        self.applied: list[str] = []
        self.cancelled: list[str] = []
        self.running = 0
        self.most_at_once = 0
        self._fail_on = fail_on

    async def handle(self, event: ReceivedEvent) -> bool:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await asyncio.sleep(0.05 if event.key == "slow" else 0.001)
            if event.event_id == self._fail_on:
                raise RuntimeError("the database went away")
            self.applied.append(event.event_id)
            return True
        except asyncio.CancelledError:
            self.cancelled.append(event.event_id)
            raise
        finally:
            self.running -= 1


async def test_each_key_in_order_different_keys_at_once() -> None:
    consumer = Recording()
    batch = [event(key, n) for n in range(3) for key in ("a", "b", "c")]
    await consumer.handle_batch(batch)
    for key in ("a", "b", "c"):
        mine = [e for e in consumer.applied if e.startswith(key)]
        assert mine == [f"{key}-{n}" for n in range(3)]
    assert consumer.most_at_once == 3  # one chain per key


async def test_a_failure_cancels_the_rest_of_the_batch_and_is_raised() -> None:
    consumer = Recording(fail_on="a-1")
    batch = [event(key, n) for n in range(3) for key in ("a", "slow")]
    with pytest.raises(ExceptionGroup) as failed:
        await consumer.handle_batch(batch)
    assert failed.group_contains(RuntimeError, match="database went away")
    assert consumer.applied == ["a-0"]  # nothing after the failure, nothing of the slow key
    assert consumer.cancelled == ["slow-0"]  # stopped mid-way: redelivered from the commit
