"""``tavla events tail``: the event streams as JSON lines, for the compliance team and operators.

``tavla events tail [--topic T ...] [--from-beginning] [--filter KEY=VALUE ...]
[--max N] [--bootstrap HOST:PORT]`` prints one JSON object per event::

    {"topic": ..., "partition": 0, "offset": 12, "key": ..., "timestamp": ...,
     "headers": {"ce_id": ..., "ce_type": ..., "ce_source": ..., ...},
     "signature": {"verified": true, "producer": "antiabuse"},
     "type": "tavla.antiabuse.v1.ComplianceAlert", "event": {...}}

``signature`` says whether the event's ``ce_signature`` proves a producer that owns
the topic, as the consumers check it (services/kit/events/signing.py):
``{"verified": true, "producer": ...}``, or ``{"verified": false, "error": ...}``
saying why a consumer would park it. The public keys come from ``--public-keys DIR``,
else ``TAVLA_SERVICE_PUBLIC_KEYS_DIR``, else the dev stack's (``.tavla/``); with none
``verified`` is null.

The payload is decoded by its ``ce_type`` header (the message's full protobuf
name) with the generated modules (every ``tavla.*.v1.events_pb2``) and printed
with ``google.protobuf.json_format`` (proto field names; fields at their
default value left out). A record that cannot be decoded is printed with
``"event": null``, an ``"error"`` saying why and its payload in base64: the
tool never stops on one bad record.

Topics: every topic of ``deploy/topics.txt`` unless ``--topic`` names some.
Without ``--from-beginning`` only events published from now on are printed
(the local broker may repeat the last batch before "now"). A filter ``KEY=VALUE``
keeps events where ``KEY`` is ``topic``, ``key``, ``type``, a header name
(``ce_source=//tavla/wallet``) or a dotted field path of the event
(``subject_account_ids=...``, ``stake.currency=USD``); a repeated field matches
when any element does; several filters must all match. It reads as no consumer
group (nothing is committed, no service's group is disturbed). The broker is
``--bootstrap``, else ``TAVLA_KAFKA_BOOTSTRAP``, else the dev broker; TLS and
SASL come from the same variables as the services' (``TAVLA_KAFKA_SECURITY_PROTOCOL``,
... in services/kit/events/connection.py), and half or contradictory ones are
refused before anything connects. Exit
status 2 with a one-line message for a malformed filter or a topic the broker
does not have.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aiokafka import AIOKafkaConsumer, TopicPartition
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError

from services.kit.devstack.keys import SERVICE_KEYS_DIR
from services.kit.env import ConfigError, Env
from services.kit.events import parked
from services.kit.events.connection import KafkaConnection
from services.kit.events.signing import EventVerifier, SignatureRefused
from services.kit.ports import DEV_KAFKA_PORT
from services.kit.service_tokens import PUBLIC_KEYS_VARIABLE, load_public_keys

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

TOPICS_FILE = Path(__file__).resolve().parents[3] / "deploy" / "topics.txt"
DEV_RUN_DIR = Path(__file__).resolve().parents[3] / ".tavla"
USAGE_ERROR = 2


def register(subparsers: Subparsers) -> None:
    events = subparsers.add_parser(
        "events", help="event stream tools: tail topics as JSON; list and replay parked events"
    )
    commands = events.add_subparsers(dest="events_command", required=True, metavar="SUBCOMMAND")
    tail = commands.add_parser(
        "tail",
        help="print events as JSON lines, decoded from protobuf, with their CloudEvents headers",
        description=(__doc__ or "").split("\n\n")[0],
    )
    tail.add_argument("--topic", action="append", default=[], help="a topic (repeatable)")
    tail.add_argument(
        "--from-beginning", action="store_true", help="start at each topic's oldest event"
    )
    tail.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keep events whose KEY (topic, key, type, a header, a field path) is VALUE",
    )
    tail.add_argument("--max", type=int, default=0, help="stop after printing N events")
    tail.add_argument("--bootstrap", default="", help="broker host:port (TAVLA_KAFKA_BOOTSTRAP)")
    tail.add_argument(
        "--public-keys",
        default="",
        metavar="DIR",
        help="the services' public keys, to check signatures (TAVLA_SERVICE_PUBLIC_KEYS_DIR)",
    )
    tail.set_defaults(handler=_tail)
    parked.register(commands)


def _tail(args: argparse.Namespace) -> int:
    try:
        filters = parse_filters(args.filter)
        topics = args.topic or default_topics()
    except ValueError as error:
        print(f"tavla events tail: {error}", file=sys.stderr)
        return USAGE_ERROR
    bootstrap = (
        args.bootstrap
        or os.environ.get("TAVLA_KAFKA_BOOTSTRAP", "")
        or f"127.0.0.1:{DEV_KAFKA_PORT}"
    )
    try:
        kafka = KafkaConnection.from_env(Env(), bootstrap)
        verifier = signature_verifier(args.public_keys)
    except ConfigError as error:
        print(f"tavla events tail: {error}", file=sys.stderr)
        return USAGE_ERROR
    try:
        asyncio.run(
            tail(
                kafka,
                topics,
                filters,
                from_beginning=args.from_beginning,
                limit=max(args.max, 0),
                out=sys.stdout,
                verifier=verifier,
            )
        )
    except ValueError as error:
        print(f"tavla events tail: {error}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:  # `| head`: the reader left; say nothing more on a closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def signature_verifier(directory: str) -> EventVerifier | None:
    """Checks signatures with the keys of ``directory``, the variable's, or the dev stack's."""
    chosen = directory or os.environ.get(PUBLIC_KEYS_VARIABLE, "")
    if not chosen:
        dev = DEV_RUN_DIR / SERVICE_KEYS_DIR / "public"
        if not dev.is_dir():
            return None
        chosen = str(dev)
    return EventVerifier(load_public_keys(Path(chosen)))


def signature_of(record: Any, verifier: EventVerifier | None) -> dict[str, Any]:
    if verifier is None:
        return {"verified": None, "error": "no public keys to check with (--public-keys)"}
    headers = {name: value.decode(errors="replace") for name, value in record.headers or ()}
    key = (record.key or b"").decode(errors="replace")
    try:
        producer = verifier.producer(record.topic, key, record.value or b"", headers)
    except SignatureRefused as refused:
        return {"verified": False, "error": str(refused)}
    return {"verified": True, "producer": producer}


def parse_filters(raw: Sequence[str]) -> dict[str, str]:
    filters = {}
    for item in raw:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--filter takes KEY=VALUE, got {item!r}")
        filters[key] = value
    return filters


def default_topics() -> list[str]:
    if not TOPICS_FILE.exists():
        raise ValueError("no deploy/topics.txt here: name the topics with --topic")
    topics = []
    for raw in TOPICS_FILE.read_text().splitlines():
        line = raw.split("#", 1)[0].split()
        if line:
            topics.append(line[0])
    return topics


@cache
def _load_event_modules() -> None:
    """Import every generated ``tavla.<area>.v1`` module so its messages are in the pool."""
    import tavla

    for info in pkgutil.walk_packages(tavla.__path__, "tavla."):
        if info.name.endswith("_pb2"):
            importlib.import_module(info.name)


def decode(ce_type: str, payload: bytes) -> dict[str, Any]:
    """The event as JSON-ready data: ``{"event": {...}}`` or ``{"event": None, "error": ...}``."""
    _load_event_modules()
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(ce_type)
    except KeyError:
        return _undecoded(payload, f"unknown event type {ce_type!r}")
    message = message_factory.GetMessageClass(descriptor)()
    try:
        message.ParseFromString(payload)
    except DecodeError as error:
        return _undecoded(payload, f"not a {ce_type}: {error}")
    return {"event": json_format.MessageToDict(message, preserving_proto_field_name=True)}


def _undecoded(payload: bytes, why: str) -> dict[str, Any]:
    return {"event": None, "error": why, "payload_base64": base64.b64encode(payload).decode()}


def line_of(record: Any, verifier: EventVerifier | None = None) -> dict[str, Any]:
    headers = {name: value.decode(errors="replace") for name, value in record.headers or ()}
    ce_type = headers.get("ce_type", "")
    stamp = datetime.fromtimestamp(record.timestamp / 1000, UTC).isoformat()
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "key": (record.key or b"").decode(errors="replace"),
        "timestamp": stamp,
        "headers": headers,
        "signature": signature_of(record, verifier),
        "type": ce_type,
        **(
            decode(ce_type, record.value or b"")
            if ce_type
            else _undecoded(record.value or b"", "no ce_type header")
        ),
    }


def _lookup(line: Mapping[str, Any], key: str) -> list[Any]:
    if key in ("topic", "key", "type"):
        return [line[key]]
    if key in line["headers"]:
        return [line["headers"][key]]
    found: Any = line.get("event") or {}
    for part in key.split("."):
        if not isinstance(found, dict) or part not in found:
            return []
        found = found[part]
    return found if isinstance(found, list) else [found]


def matches(line: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    return all(
        any(str(value) == wanted for value in _lookup(line, key)) for key, wanted in filters.items()
    )


async def tail(
    kafka: KafkaConnection,
    topics: Sequence[str],
    filters: Mapping[str, str],
    *,
    from_beginning: bool,
    limit: int,
    out: TextIO,
    verifier: EventVerifier | None = None,
) -> None:
    consumer = AIOKafkaConsumer(**kafka.client_options(), enable_auto_commit=False)
    await consumer.start()
    try:
        known = await consumer.topics()  # also fetches the partitions' metadata
        missing = sorted(set(topics) - known)
        if missing:
            raise ValueError(f"the broker has no topic {', '.join(missing)}")
        partitions = [
            TopicPartition(topic, number)
            for topic in topics
            for number in sorted(consumer.partitions_for_topic(topic) or ())
        ]
        consumer.assign(partitions)
        if from_beginning:
            await consumer.seek_to_beginning(*partitions)
        else:
            await consumer.seek_to_end(*partitions)
        printed = 0
        while not limit or printed < limit:
            for batch in (await consumer.getmany(timeout_ms=1000)).values():
                for record in batch:
                    line = line_of(record, verifier)
                    if not matches(line, filters):
                        continue
                    out.write(json.dumps(line, sort_keys=True) + "\n")
                    out.flush()
                    printed += 1
                    if limit and printed >= limit:
                        return
    finally:
        await consumer.stop()
