"""An event with its CloudEvents attributes, as stored in the outbox and sent to Kafka."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from google.protobuf.message import Message

from services.kit.events.signing import SIGNATURE_HEADER, EventSigner
from services.kit.logging import current_request_id

SPEC_VERSION = "1.0"
CONTENT_TYPE = "application/protobuf"
REQUEST_ID_HEADER = "tavla_request_id"


@dataclass(frozen=True)
class Envelope:
    event_id: str
    topic: str
    key: str
    ce_type: str
    payload: bytes
    headers: dict[str, str]
    created_at: datetime

    @classmethod
    def wrap(
        cls, *, topic: str, key: str, message: Message, source: str, now: datetime
    ) -> Envelope:
        event_id = str(uuid.uuid4())
        ce_type = message.DESCRIPTOR.full_name
        headers = {
            "ce_id": event_id,
            "ce_type": ce_type,
            "ce_source": f"//tavla/{source}",
            "ce_specversion": SPEC_VERSION,
            "ce_time": now.isoformat(),
            "content-type": CONTENT_TYPE,
        }
        request_id = current_request_id()
        if request_id:
            headers[REQUEST_ID_HEADER] = request_id
        return cls(
            event_id=event_id,
            topic=topic,
            key=key,
            ce_type=ce_type,
            payload=message.SerializeToString(),
            headers=headers,
            created_at=now,
        )

    def as_outbox_values(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "topic": self.topic,
            "key": self.key,
            "ce_type": self.ce_type,
            "payload": self.payload,
            "headers": self.headers,
            "created_at": self.created_at,
        }

    @staticmethod
    def outbox_columns(envelopes: Sequence[Envelope]) -> list[list[Any]]:
        """The outbox's columns of many events, one list each, for one ``unnest`` INSERT.

        In the order event_id, topic, key, ce_type, payload, headers (JSON text), created_at.
        """
        return [
            [e.event_id for e in envelopes],
            [e.topic for e in envelopes],
            [e.key for e in envelopes],
            [e.ce_type for e in envelopes],
            [e.payload for e in envelopes],
            [json.dumps(e.headers) for e in envelopes],
            [e.created_at for e in envelopes],
        ]

    def kafka_headers(self, signer: EventSigner | None = None) -> list[tuple[str, bytes]]:
        """The Kafka headers; with ``signer``, also its ``ce_signature`` (as a relay sends)."""
        headers = [(name, value.encode()) for name, value in self.headers.items()]
        if signer is not None:
            signature = signer.sign(self.topic, self.key, self.payload, self.headers)
            headers.append((SIGNATURE_HEADER, signature.encode()))
        return headers


@dataclass(frozen=True)
class ReceivedEvent:
    """An event as a consumer sees it: attributes decoded, payload still bytes."""

    event_id: str
    ce_type: str
    source: str
    topic: str
    key: str
    payload: bytes
    headers: dict[str, str]

    @classmethod
    def from_kafka(
        cls, topic: str, key: bytes | None, value: bytes, headers: list[tuple[str, bytes]]
    ) -> ReceivedEvent:
        decoded = {name: raw.decode() for name, raw in headers}
        missing = [name for name in ("ce_id", "ce_type") if name not in decoded]
        if missing:
            raise ValueError(f"event on {topic} lacks CloudEvents header(s) {', '.join(missing)}")
        return cls(
            event_id=decoded["ce_id"],
            ce_type=decoded["ce_type"],
            source=decoded.get("ce_source", ""),
            topic=topic,
            key=(key or b"").decode(),
            payload=value,
            headers=decoded,
        )
