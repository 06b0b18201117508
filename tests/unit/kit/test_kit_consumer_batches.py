"""A fetched batch: one key's events in order, different keys concurrently; an event's
own failure is retried and parked while the others go on, an infrastructure failure
retries the whole batch."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.kit.clock import SystemClock
from services.kit.events.consumer import Delivery, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.events.signing import SIGNATURE_HEADER, EventSigner, EventVerifier
from services.kit.keys import key_id

TOPIC = "tavla.test.v1"
KEY = ec.generate_private_key(ec.SECP256R1())
SIGNER = EventSigner("test", KEY)
VERIFIER = EventVerifier(
    {"test": {key_id(KEY.public_key()): KEY.public_key()}}, {TOPIC: frozenset({"test"})}
)


def event(key: str, number: int) -> ReceivedEvent:
    headers = {"ce_id": f"{key}-{number}", "ce_type": "test.Event", "ce_source": "//tavla/test"}
    headers[SIGNATURE_HEADER] = SIGNER.sign(TOPIC, key, b"", headers)
    return ReceivedEvent.from_kafka(
        TOPIC, key.encode(), b"", [(name, value.encode()) for name, value in headers.items()]
    )


def deliveries(events: list[ReceivedEvent]) -> list[Delivery]:
    return [Delivery.of(e, offset=number) for number, e in enumerate(events)]


class Recording(EventConsumer):
    """Records the order of applications, how many ran at once and what it parked; no database."""

    def __init__(self, fail_on: str = "", failure: Exception | None = None) -> None:
        super().__init__(
            service="test",
            name="batches",
            sessions=Any,  # type: ignore[arg-type]
            consumer_factory=lambda: (_ for _ in ()).throw(AssertionError("no broker")),
            handlers={"test.Event": self._unused},
            clock=SystemClock(),
            verifier=VERIFIER,
            attempts=3,
            retry_seconds=0.01,
        )
        self.applied: list[str] = []
        self.cancelled: list[str] = []
        self.tried: list[str] = []
        self.parked: list[tuple[str, str]] = []
        self.running = 0
        self.most_at_once = 0
        self._fail_on = fail_on
        self._failure = failure or RuntimeError("bigint out of range")

    @staticmethod
    async def _unused(session: Any, event: ReceivedEvent) -> None:
        raise AssertionError("handle is overridden")

    async def handle(self, event: ReceivedEvent) -> bool:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        self.tried.append(event.event_id)
        try:
            await asyncio.sleep(0.05 if event.key == "slow" else 0.001)
            if event.event_id == self._fail_on:
                raise self._failure
            self.applied.append(event.event_id)
            return True
        except asyncio.CancelledError:
            self.cancelled.append(event.event_id)
            raise
        finally:
            self.running -= 1

    async def _park(self, delivery: Delivery, reason: str, error: str, *, attempts: int) -> None:
        self.parked.append((delivery.headers.get("ce_id", ""), reason))

    async def _still_blocked(self, event: ReceivedEvent) -> bool:
        return True  # no table here: what this consumer parked stays parked


async def test_each_key_in_order_different_keys_at_once() -> None:
    consumer = Recording()
    batch = [event(key, n) for n in range(3) for key in ("a", "b", "c")]
    await consumer.handle_batch(deliveries(batch))
    for key in ("a", "b", "c"):
        mine = [e for e in consumer.applied if e.startswith(key)]
        assert mine == [f"{key}-{n}" for n in range(3)]
    assert consumer.most_at_once == 3  # one chain per key


async def test_a_failing_event_is_retried_then_parked_with_its_key_and_the_others_go_on() -> None:
    consumer = Recording(fail_on="a-1")
    batch = [event(key, n) for n in range(3) for key in ("a", "slow")]
    await consumer.handle_batch(deliveries(batch))
    assert consumer.tried.count("a-1") == 3  # the attempts, then no more
    assert consumer.applied == ["a-0", "slow-0", "slow-1", "slow-2"]
    # a-2 is not applied before a-1: it waits behind it.
    assert consumer.parked == [("a-1", "handler"), ("a-2", "behind_parked")]


async def test_an_infrastructure_failure_cancels_the_rest_of_the_batch_and_is_raised() -> None:
    consumer = Recording(fail_on="a-1", failure=ConnectionError("the database went away"))
    batch = [event(key, n) for n in range(3) for key in ("a", "slow")]
    with pytest.raises(ExceptionGroup) as failed:
        await consumer.handle_batch(deliveries(batch))
    assert failed.group_contains(ConnectionError, match="database went away")
    assert consumer.applied == ["a-0"]  # nothing after the failure, nothing of the slow key
    assert consumer.cancelled == ["slow-0"]  # stopped mid-way: redelivered from the commit
    assert consumer.parked == []


async def test_unsigned_forged_and_non_owner_events_are_parked_never_applied() -> None:
    consumer = Recording()
    good = event("a", 0)
    unsigned = {k: v for k, v in good.headers.items() if k != SIGNATURE_HEADER}
    intruder = EventSigner("intruder", ec.generate_private_key(ec.SECP256R1()))
    stranger = dict(unsigned, ce_id="a-1")
    stranger[SIGNATURE_HEADER] = intruder.sign(TOPIC, "a", b"", stranger)
    moved = dict(good.headers, ce_id="a-2")  # a genuine signature on another event id
    batch = [
        ReceivedEvent.from_kafka(TOPIC, b"a", b"", [(k, v.encode()) for k, v in h.items()])
        for h in (dict(unsigned, ce_id="a-0"), stranger, moved)
    ]
    await consumer.handle_batch([*deliveries(batch), Delivery.of(event("a", 3), offset=3)])
    assert consumer.parked == [("a-0", "signature"), ("a-1", "signature"), ("a-2", "signature")]
    assert consumer.applied == ["a-3"]  # a forgery holds nobody's real events back


class Record:
    """A fetched record's fields as aiokafka's ConsumerRecord has them."""

    def __init__(self, headers: list[tuple[str, bytes]], key: bytes = b"k") -> None:
        self.topic, self.partition, self.offset = TOPIC, 0, 0
        self.key, self.value, self.headers = key, b"", headers


@pytest.mark.parametrize(
    ("headers", "key", "skipped"),
    [
        ([("ce_id", b"1"), ("ce_type", b"other.Event")], b"k", True),
        ([("ce_id", b"1"), ("ce_type", b"test.Event")], b"k", False),  # handled
        ([("ce_type", b"other.Event")], b"k", False),  # no ce_id: parked as malformed
        ([("ce_id", b"1")], b"k", False),  # no ce_type: parked as malformed
        ([("ce_id", b"\xff"), ("ce_type", b"other.Event")], b"k", False),  # not UTF-8
        ([("ce_id", b"1"), ("ce_type", b"other.Event")], b"\xff", False),  # key not UTF-8
        # UTF-8 beyond ASCII is well-formed (decoded header by header to know it).
        ([("ce_id", b"1"), ("ce_type", b"other.Event"), ("x", "é".encode())], b"k", True),
        ([("ce_id", b"1"), ("ce_type", b"other.Event")], "ké".encode(), True),
        ([("ce_id", b"1"), ("ce_type", "tést.Event".encode())], b"k", True),
        # The last header of a name is the one applied, as ReceivedEvent.from_kafka reads it.
        ([("ce_id", b"1"), ("ce_type", b"other.Event"), ("ce_type", b"test.Event")], b"k", False),
        ([("ce_id", b"1"), ("ce_type", b"test.Event"), ("ce_type", b"other.Event")], b"k", True),
    ],
)
def test_only_well_formed_records_of_unhandled_types_are_skipped_unread(
    headers: list[tuple[str, bytes]], key: bytes, skipped: bool
) -> None:
    consumer = Recording()
    record = Record(headers, key)
    assert consumer._skipped_unread(record) is skipped
    if skipped:  # the full path agrees: a well-formed event the consumer does not want
        delivery = Delivery.from_record(record)
        assert delivery.event is not None and not consumer.wants(delivery.event)
