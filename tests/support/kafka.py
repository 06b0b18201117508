"""Reading and writing the real broker from tests: what was published, what a group committed.

Nothing here asks the broker for a partition's end offset: the local broker
(Tansu) answers ListOffsets with the last *batch*'s base offset, short of records
that arrived several to a batch. Readers wait for the records they expect
instead, and :func:`mark_partitions` puts a record of known offset on every
partition when a test must know that a group consumed everything before it.

What tests write straight to the broker is signed as the topic's owner would sign
it (the consumers under test verify producers: services/kit/events/signing.py),
unless a test forges on purpose (``signed_as``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import CommitFailedError
from aiokafka.structs import OffsetAndMetadata
from google.protobuf.message import Message

from services.kit.devstack.keys import ServiceKeys, load_private_key
from services.kit.events.envelope import Envelope
from services.kit.events.signing import TOPIC_OWNERS, EventSigner, EventVerifier
from services.kit.service_tokens import load_public_keys
from tests.support.identity import SERVICE_KEYS

OWNER = "owner"  # signed_as: the topic's declared owner, as its outbox relay signs


@cache
def event_signer(service: str, keys: ServiceKeys = SERVICE_KEYS) -> EventSigner:
    """Signs events as ``service`` does, with its key among ``keys`` (the tests' by default;
    a ``tavla dev`` run's own for the end-to-end tests)."""
    return EventSigner(service, load_private_key(keys.private_key_file(service)))


def event_verifier(owners: Mapping[str, frozenset[str]] = TOPIC_OWNERS) -> EventVerifier:
    """What the services under test verify producers with (every test service's key)."""
    return EventVerifier(load_public_keys(SERVICE_KEYS.public_keys_dir), owners)


def kafka_headers(
    envelope: Envelope, signed_as: str | None = OWNER, keys: ServiceKeys = SERVICE_KEYS
) -> list[tuple[str, bytes]]:
    """The envelope's headers with a signature: the topic owner's, ``signed_as``'s, or none."""
    if signed_as is None:
        return envelope.kafka_headers()
    service = sorted(TOPIC_OWNERS[envelope.topic])[0] if signed_as == OWNER else signed_as
    return envelope.kafka_headers(event_signer(service, keys))


async def publish(
    bootstrap: str,
    envelopes: Sequence[Envelope],
    *,
    signed_as: str | None = OWNER,
    keys: ServiceKeys = SERVICE_KEYS,
) -> list[tuple[int, int]]:
    """Send every envelope (as the outbox relay would), all at once; their (partition, offset).

    Signed as the topic's owner, or as the service ``signed_as`` names (a forgery with
    another service's key), or not at all (``signed_as=None``), with that service's key
    among ``keys``.
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        sent = [
            await producer.send(
                envelope.topic,
                envelope.payload,
                key=envelope.key.encode(),
                headers=kafka_headers(envelope, signed_as, keys),
            )
            for envelope in envelopes
        ]
        records = await asyncio.gather(*sent)
    finally:
        await producer.stop()
    return [(record.partition, record.offset) for record in records]


async def mark_partitions(bootstrap: str, topic: str, message: Message) -> list[tuple[int, int]]:
    """One event (``message``, which its consumers ignore) on every partition of ``topic``.

    Returns their (partition, offset): a group whose committed offsets are past them
    all has consumed everything published before.
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        marks = []
        for partition in sorted(await producer.partitions_for(topic)):
            envelope = Envelope.wrap(
                topic=topic,
                key=f"mark-{uuid.uuid4().hex[:8]}",
                message=message,
                source="tests",
                now=datetime.now(UTC),
            )
            record = await producer.send_and_wait(
                topic,
                envelope.payload,
                key=envelope.key.encode(),
                headers=kafka_headers(envelope),
                partition=partition,
            )
            marks.append((record.partition, record.offset))
    finally:
        await producer.stop()
    return marks


async def skip_backlog(
    bootstrap: str, group: str, topic: str, message: Message, timeout: float = 60.0
) -> None:
    """Move ``group``'s committed offsets past everything now on ``topic``, as an
    operator resets a group's offsets: marks (``message``, which its consumers ignore)
    go on every partition and the group's offsets are set just past them.

    For a test whose fresh service must start with an empty backlog, not the events
    of the module's earlier tests. No member of the group may be running; one that a
    killed process left is waited out (the broker refuses the commit until its session
    expires), for up to ``timeout`` seconds.
    """
    marks = await mark_partitions(bootstrap, topic, message)
    offsets = {
        TopicPartition(topic, partition): OffsetAndMetadata(offset + 1, "")
        for partition, offset in marks
    }
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(list(offsets))
        async with asyncio.timeout(timeout):
            while True:
                try:
                    await consumer.commit(offsets)
                    break
                except CommitFailedError:  # a member is still in the group
                    await asyncio.sleep(0.5)
    except TimeoutError:
        raise AssertionError(f"{group} kept a member for {timeout} s") from None
    finally:
        await consumer.stop()
    if not await consumed_past(bootstrap, group, topic, marks):
        raise AssertionError(f"the broker did not keep {group}'s offsets on {topic}")


async def read_events(
    bootstrap: str, topic: str, wanted: Collection[str], timeout: float = 60.0
) -> list[Any]:
    """Records of ``topic`` from the beginning (no group) until every ``ce_id`` in
    ``wanted`` was seen; fails after ``timeout`` naming those never seen."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    records: list[Any] = []
    missing = set(wanted)
    try:
        partitions = await _partitions(consumer, topic)
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        async with asyncio.timeout(timeout):
            while missing:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    records += batch
                    missing -= {headers_of(record).get("ce_id", "") for record in batch}
    except TimeoutError:
        raise AssertionError(f"never published on {topic}: {sorted(missing)}") from None
    finally:
        await consumer.stop()
    return records


async def first_event(
    bootstrap: str, topic: str, key: str, ce_type: str, timeout: float = 60.0
) -> Any:
    """The first record of ``topic`` (from the beginning, no group) with ``key`` and
    ``ce_type``; fails after ``timeout`` saying which was never published."""

    def typed(record: Any) -> bool:
        return bool(headers_of(record).get("ce_type") == ce_type)

    try:
        records = await keyed_records(
            bootstrap, topic, key, lambda found: typed(found[-1]), timeout
        )
    except AssertionError:
        raise AssertionError(f"no {ce_type} for {key} on {topic}") from None
    return records[-1]


async def keyed_records(
    bootstrap: str,
    topic: str,
    key: str,
    enough: Callable[[list[Any]], bool],
    timeout: float = 60.0,
) -> list[Any]:
    """The records of ``topic`` with ``key``, from the beginning and in their order, up to
    the first at which ``enough(records so far)`` holds; fails after ``timeout``.

    No group: nothing to join, so the first record comes at once (a new group's first
    JoinGroup waits half its session timeout on the local broker).
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[Any] = []
    try:
        partitions = await _partitions(consumer, topic)
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        async with asyncio.timeout(timeout):
            while True:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for record in batch:
                        if record.key == key.encode():
                            found.append(record)
                            if enough(found):
                                return found
    except TimeoutError:
        raise AssertionError(f"{topic} had only {len(found)} records of {key}") from None
    finally:
        await consumer.stop()


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The consumer group's committed offset (the next record it will read) by partition.

    Asked as a member would (OffsetFetch), but with partitions assigned by hand, so the
    group is not joined and its members are not disturbed.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        partitions = await _partitions(consumer, topic)
        consumer.assign(partitions)
        committed = {p.partition: await consumer.committed(p) for p in partitions}
    finally:
        await consumer.stop()
    return {partition: offset for partition, offset in committed.items() if offset is not None}


async def consumed_past(
    bootstrap: str, group: str, topic: str, records: Sequence[tuple[int, int]]
) -> bool:
    """The group committed offsets past every one of ``records`` (partition, offset)."""
    committed = await committed_offsets(bootstrap, group, topic)
    return all(committed.get(partition, -1) > offset for partition, offset in records)


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    numbers = consumer.partitions_for_topic(topic)
    if not numbers:
        await consumer.force_metadata_update()
        numbers = consumer.partitions_for_topic(topic)
    return [TopicPartition(topic, number) for number in sorted(numbers or ())]


def headers_of(record: Any) -> dict[str, str]:
    return {name: value.decode() for name, value in record.headers}
