"""The manual clock and the CloudEvents envelope."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from services.kit.clock import ManualClock
from services.kit.events.connection import KafkaConnection
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.logging import bind_request_id
from tavla.accounts.v1 import events_pb2


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(datetime(2026, 5, 1, tzinfo=UTC))
    clock.advance(timedelta(minutes=5))
    assert clock.now() == datetime(2026, 5, 1, 0, 5, tzinfo=UTC)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(timedelta(seconds=-1))
    with pytest.raises(ValueError, match="timezone-aware"):
        ManualClock(datetime(2026, 5, 1))


def test_envelope_carries_cloudevents_attributes_and_the_request_id() -> None:
    bind_request_id("req-123")
    now = datetime(2026, 5, 1, tzinfo=UTC)
    message = events_pb2.AccountRegistered(account_id="a-1")
    envelope = Envelope.wrap(
        topic="tavla.accounts.v1", key="a-1", message=message, source="accounts", now=now
    )
    assert envelope.headers["ce_type"] == "tavla.accounts.v1.AccountRegistered"
    assert envelope.headers["ce_source"] == "//tavla/accounts"
    assert envelope.headers["ce_time"] == "2026-05-01T00:00:00+00:00"
    assert envelope.headers["tavla_request_id"] == "req-123"
    assert envelope.headers["ce_id"] == envelope.event_id

    other = Envelope.wrap(
        topic="tavla.accounts.v1", key="a-1", message=message, source="accounts", now=now
    )
    assert other.event_id != envelope.event_id

    received = ReceivedEvent.from_kafka(
        envelope.topic, envelope.key.encode(), envelope.payload, envelope.kafka_headers()
    )
    assert received.event_id == envelope.event_id
    assert events_pb2.AccountRegistered.FromString(received.payload) == message


def test_an_event_without_cloudevents_headers_is_rejected_with_a_reason() -> None:
    with pytest.raises(ValueError, match="lacks CloudEvents header"):
        ReceivedEvent.from_kafka("tavla.game.v1", b"k", b"", [("ce_type", b"x")])


def test_the_idempotence_switch_makes_the_relay_producer_idempotent_but_not_transactional() -> None:
    """Replicas share one configuration: a transactional id would be one per service, and
    three replicas of it fence one another (services/kit/events/kafka.py says why not)."""
    from services.kit.events.kafka import make_producer, producer_options

    async def configs() -> tuple[Any, Any]:
        kafka = KafkaConnection("127.0.0.1:1")
        local = make_producer(kafka, service="wallet", idempotence=False)
        production = make_producer(kafka, service="wallet", idempotence=True)
        return local, production

    local, production = asyncio.run(configs())
    assert local._txn_manager is None  # the local broker rejects InitProducerId
    assert production._txn_manager is not None  # idempotent: producer id and sequences
    assert production._txn_manager.transactional_id is None
    options = producer_options(KafkaConnection("k:9092"), service="wallet", idempotence=True)
    assert options["enable_idempotence"] is True
    assert options["acks"] == "all"  # idempotence requires every in-sync replica's ack
    assert "transactional_id" not in options


def test_consumers_hand_a_silent_members_partitions_on_after_the_session_timeout() -> None:
    from services.kit.events.kafka import make_consumer

    async def consumer() -> Any:
        return make_consumer(
            KafkaConnection("127.0.0.1:1"), group="g", topics=["t"], session_timeout_ms=6000
        )

    made = asyncio.run(consumer())
    assert (made._session_timeout_ms, made._heartbeat_interval_ms) == (6000, 2000)
    assert made._enable_auto_commit is False  # offsets only after the effect is committed


def test_the_relay_partitions_keys_as_kafkas_default_partitioner_does() -> None:
    from aiokafka.partitioner import DefaultPartitioner

    from services.kit.events.kafka import key_partitioner

    partitions = list(range(12))
    for index in range(500):
        key = f"acct-{index:04d}".encode()
        for _ in range(2):  # the second time from the remembered hash
            assert key_partitioner(key, partitions, partitions) == DefaultPartitioner()(
                key, partitions, partitions
            )
    assert key_partitioner(None, partitions, [3]) == 3
