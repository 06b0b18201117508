"""Kafka clients configured one way for every service."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


def make_producer(bootstrap: str, *, service: str, idempotence: bool) -> AIOKafkaProducer:
    """A producer for the outbox relay.

    With ``idempotence`` (Apache Kafka in production) it is idempotent and
    transactional; the fixed transactional id fences a stale relay of the same
    service. The local broker rejects both, hence the switch.
    """
    options: dict[str, object] = {
        "bootstrap_servers": bootstrap,
        "client_id": f"tavla-{service}-relay",
        "acks": "all",
        "request_timeout_ms": 10_000,
        "linger_ms": 2,
    }
    if idempotence:
        options["enable_idempotence"] = True
        options["transactional_id"] = f"tavla-{service}-outbox"
    return AIOKafkaProducer(**options)


def make_consumer(bootstrap: str, *, group: str, topics: list[str]) -> AIOKafkaConsumer:
    # Offsets are committed only after the effect (and its inbox row) is committed.
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=bootstrap,
        group_id=group,
        client_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
