"""Kafka clients configured one way for every service.

The outbox relay's producer is idempotent but not transactional (with
``TAVLA_KAFKA_IDEMPOTENCE``, on Apache Kafka). Why no transactions, for any
number of replicas:

* Exactly-once comes from the ends, not the transport: the outbox row commits
  with the state change, the relay marks it sent only after the broker
  acknowledged it (at least once), and every consumer applies a ``ce_id`` once
  through its inbox table. A Kafka transaction would only make a relay batch
  all-or-nothing for ``read_committed`` readers, which the inbox already makes
  harmless.
* A transactional id must be unique per live producer. One id per service (what
  this module used to set) makes every replica fence the others: each time the
  relay's advisory lock passes to another replica, its ``InitProducerId`` bumps
  the epoch and the previous holder's next batch fails with a fencing error.
  One id per pod (the pod's name) avoids that, but a pod SIGKILLed in the middle
  of a transaction leaves it open until ``transaction.timeout.ms``, and while it
  is open every ``read_committed`` consumer of those partitions stops at it (the
  last stable offset); a Deployment's replacement pod has a new name, so it
  cannot abort its predecessor's transaction.
* What the zombie fencing of a shared id would prevent (a relay that lost its
  database lock still publishing a batch the next holder publishes again) is a
  duplicate ``ce_id``, which the inbox skips; per-key order of first arrivals is
  kept because the next holder publishes every unsent row in ``seq`` order.

Idempotence alone (``enable_idempotence``: a producer id and per-partition
sequence numbers, ``acks=all``) keeps the producer's own retries from writing a
record twice or out of order, needs nothing unique per replica, and leaves
nothing open when a process dies. The local broker (Tansu) rejects even that
(``InitProducerId``), hence the switch.

Every client takes its servers, TLS and SASL from one
:class:`~services.kit.events.connection.KafkaConnection` (``Settings.kafka``),
so no client of a service can speak plaintext to a broker the others reach
over TLS.
"""

from __future__ import annotations

import functools
import random

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.partitioner import murmur2

from services.kit.events.connection import KafkaConnection

# Distinct keys whose hash the relay's partitioner remembers (about 100 bytes each).
PARTITION_HASHES_REMEMBERED = 65_536


@functools.lru_cache(maxsize=PARTITION_HASHES_REMEMBERED)
def _key_hash(key: bytes) -> int:
    return int(murmur2(key)) & 0x7FFFFFFF


def key_partitioner(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """aiokafka's default partitioner (the Java client's murmur2 of the key), remembering
    each key's hash: the pure-Python hash was a visible part of the relay's CPU, and a
    game's or an account's events share their key."""
    if key is None:
        return random.choice(available or all_partitions)
    return all_partitions[_key_hash(key) % len(all_partitions)]


def producer_options(
    kafka: KafkaConnection, *, service: str, idempotence: bool
) -> dict[str, object]:
    """The outbox relay producer's settings (see the module docstring for idempotence)."""
    options: dict[str, object] = {
        **kafka.client_options(),
        "client_id": f"tavla-{service}-relay",
        "acks": "all",
        "request_timeout_ms": 10_000,
        "linger_ms": 2,
        "partitioner": key_partitioner,
    }
    if idempotence:
        options["enable_idempotence"] = True  # never a transactional_id: see above
    return options


def make_producer(
    kafka: KafkaConnection, *, service: str, idempotence: bool
) -> AIOKafkaProducer:
    """A producer for the outbox relay; must be created inside the running event loop."""
    return AIOKafkaProducer(**producer_options(kafka, service=service, idempotence=idempotence))


# A gathering consumer's fetch waits for this much (aiokafka's largest fetch of a partition).
GATHERED_FETCH_BYTES = 1_048_576
# How often aiokafka's background fetch task wakes while nothing it waits on happened
# (``consumer_timeout_ms``, 200 by default). What gives it work wakes it at once (a fetch
# answered, the records handed over, a rebalance, a partition resumed, metadata), so the
# timeout only bounds a missed wake; at 200 ms every consumer of every process woke its
# event loop five times a second, idle or not: an idle process's most frequent wake
# (services/tournaments/README.md measures what it cost).
FETCHER_WAKE_MS = 1_000


def consumer_options(
    kafka: KafkaConnection,
    *,
    group: str,
    session_timeout_ms: int = 10_000,
    gather_ms: int | None = None,
) -> dict[str, object]:
    """A consumer group member's settings (see :func:`make_consumer`)."""
    options: dict[str, object] = {
        **kafka.client_options(),
        "group_id": group,
        "client_id": group,
        "enable_auto_commit": False,
        "auto_offset_reset": "earliest",
        "isolation_level": "read_committed",
        "session_timeout_ms": session_timeout_ms,
        "heartbeat_interval_ms": max(session_timeout_ms // 3, 100),  # Kafka's usual third
        "consumer_timeout_ms": FETCHER_WAKE_MS,
    }
    if gather_ms is not None:
        options["fetch_min_bytes"] = GATHERED_FETCH_BYTES
        options["fetch_max_wait_ms"] = gather_ms
    return options


def make_consumer(
    kafka: KafkaConnection,
    *,
    group: str,
    topics: list[str],
    session_timeout_ms: int = 10_000,
    gather_ms: int | None = None,
) -> AIOKafkaConsumer:
    """A consumer group member; offsets are committed by hand, after the effect.

    ``session_timeout_ms`` is how long the group waits for a member that stopped
    answering (a SIGKILLed replica) before its partitions go to the others.
    read_committed costs nothing without transactions, and keeps any transactional
    writer to these topics (a connector, a tool) from showing aborted records.

    ``gather_ms`` (unset: the broker answers a fetch as soon as it has a record) makes
    the broker hold each fetch until it has a full one or ``gather_ms`` passed: for a
    consumer of a busy topic that wants few of its events, one fetch (and one batch)
    each ``gather_ms`` instead of one every few records, each event seen up to
    ``gather_ms`` later.
    """
    return AIOKafkaConsumer(
        *topics,
        **consumer_options(
            kafka, group=group, session_timeout_ms=session_timeout_ms, gather_ms=gather_ms
        ),
    )
