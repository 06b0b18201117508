"""``tavla events tail`` as a subprocess on the real broker: events printed as JSON lines,
decoded from protobuf by their ce_type, with their CloudEvents headers and filters."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message

from services.kit.events.envelope import Envelope
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.common.v1 import money_pb2
from tavla.wallet.v1 import events_pb2 as wallet_events
from tests.support.identity import SERVICE_KEYS
from tests.support.kafka import publish
from tests.support.processes import REPO, tavla

ALERTS = "tavla.compliance.alerts.v1"


def wrap(topic: str, key: str, message: Message, source: str = "antiabuse") -> Envelope:
    return Envelope.wrap(topic=topic, key=key, message=message, source=source,
                         now=datetime.now(UTC))  # fmt: skip


def alert(alert_id: str, subject: str) -> Envelope:
    message = antiabuse_events.ComplianceAlert(
        alert_id=alert_id,
        kind=antiabuse_events.ALERT_KIND_CHIP_DUMPING,
        subject_account_ids=[subject, "someone-else"],
        severity=antiabuse_events.SEVERITY_HIGH,
        evidence=[antiabuse_events.Evidence(kind="one_directional_flow",
                                            details={"net_minor": "6000"})],
    )  # fmt: skip
    message.occurred_at.FromDatetime(datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    return wrap(ALERTS, alert_id, message)


def json_lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


async def test_tail_prints_decoded_events_with_headers_and_filters(kafka_broker: Any) -> None:
    subject = f"acct-{uuid.uuid4().hex[:8]}"
    first, second = alert(str(uuid.uuid4()), subject), alert(str(uuid.uuid4()), "other")
    deposit = wallet_events.Deposited(
        account_id=subject, deposit_id="d-1", amount=money_pb2.Money(minor_units=2500,
                                                                      currency="EUR"),
    )  # fmt: skip
    unknown = Envelope(
        event_id=str(uuid.uuid4()), topic=ALERTS, key=subject, ce_type="tavla.nowhere.v1.Nothing",
        payload=b"\x01\x02", headers={"ce_id": "x", "ce_type": "tavla.nowhere.v1.Nothing"},
        created_at=datetime.now(UTC),
    )  # fmt: skip
    await publish(
        kafka_broker.bootstrap,
        [first, second, unknown, wrap("tavla.wallet.v1", subject, deposit, "wallet")],
    )

    code, output = await tavla(
        "events", "tail", "--topic", ALERTS, "--topic", "tavla.wallet.v1", "--from-beginning",
        "--filter", f"subject_account_ids={subject}", "--max", "1",
        "--bootstrap", kafka_broker.bootstrap, env=dict(os.environ),
    )  # fmt: skip
    assert code == 0, output
    [line] = json_lines(output)
    assert line["topic"] == ALERTS and line["key"] == first.key
    assert line["type"] == "tavla.antiabuse.v1.ComplianceAlert"
    assert line["headers"]["ce_id"] == first.event_id
    assert line["headers"]["ce_source"] == "//tavla/antiabuse"
    assert line["headers"]["content-type"] == "application/protobuf"
    assert line["event"] == {
        "alert_id": first.key,
        "kind": "ALERT_KIND_CHIP_DUMPING",
        "subject_account_ids": [subject, "someone-else"],
        "severity": "SEVERITY_HIGH",
        "evidence": [{"kind": "one_directional_flow", "details": {"net_minor": "6000"}}],
        "occurred_at": "2026-12-01T12:00:00Z",
    }

    # Two filters at once, across topics: the deposit (a field path), the undecodable record.
    code, output = await tavla(
        "events", "tail", "--topic", ALERTS, "--topic", "tavla.wallet.v1", "--from-beginning",
        "--filter", f"key={subject}", "--max", "2", "--bootstrap", kafka_broker.bootstrap,
        env=dict(os.environ),
    )  # fmt: skip
    assert code == 0, output
    lines = {line["type"]: line for line in json_lines(output)}
    assert lines["tavla.wallet.v1.Deposited"]["event"]["amount"] == {
        "minor_units": "2500", "currency": "EUR"
    }  # fmt: skip
    nothing = lines["tavla.nowhere.v1.Nothing"]
    assert nothing["event"] is None and "unknown event type" in nothing["error"]
    assert nothing["payload_base64"] == "AQI="


async def test_tail_follows_new_events_and_refuses_a_bad_filter(kafka_broker: Any) -> None:
    code, output = await tavla("events", "tail", "--filter", "no-equals-sign",
                               env=dict(os.environ))  # fmt: skip
    assert code == 2 and "KEY=VALUE" in output
    nowhere = ("--topic", "tavla.nowhere.v1", "--bootstrap", kafka_broker.bootstrap)
    code, output = await tavla("events", "tail", *nowhere, env=dict(os.environ))
    assert code == 2 and "no topic tavla.nowhere.v1" in output

    subject = f"acct-{uuid.uuid4().hex[:8]}"
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "services.cli", "events", "tail", "--topic", ALERTS,
        "--filter", f"subject_account_ids={subject}", "--max", "1",
        "--bootstrap", kafka_broker.bootstrap, cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    sent: set[str] = set()
    async with asyncio.timeout(120):
        # It starts at the end: publish until it has seen one of ours (no guess at its start-up).
        while process.returncode is None:
            envelope = alert(str(uuid.uuid4()), subject)
            sent.add(envelope.event_id)
            await publish(kafka_broker.bootstrap, [envelope])
            try:
                await asyncio.wait_for(asyncio.shield(process.wait()), timeout=0.5)
            except TimeoutError:
                continue
        output, _ = await process.communicate()
    [line] = json_lines(output.decode())
    assert line["headers"]["ce_id"] in sent


async def test_tail_says_whether_each_signature_proves_the_topics_owner(kafka_broker: Any) -> None:
    subject = f"acct-{uuid.uuid4().hex[:8]}"
    genuine, forged, unsigned = (alert(str(uuid.uuid4()), subject) for _ in range(3))
    await publish(kafka_broker.bootstrap, [genuine])  # as antiabuse's relay signs it
    await publish(kafka_broker.bootstrap, [forged], signed_as="analysis")
    await publish(kafka_broker.bootstrap, [unsigned], signed_as=None)

    code, output = await tavla(
        "events", "tail", "--topic", ALERTS, "--from-beginning",
        "--filter", f"subject_account_ids={subject}", "--max", "3",
        "--bootstrap", kafka_broker.bootstrap,
        "--public-keys", str(SERVICE_KEYS.public_keys_dir), env=dict(os.environ),
    )  # fmt: skip
    assert code == 0, output
    signatures = {line["key"]: line["signature"] for line in json_lines(output)}
    assert signatures[genuine.key] == {"verified": True, "producer": "antiabuse"}
    assert signatures[forged.key]["verified"] is False
    assert "analysis does not own tavla.compliance.alerts.v1" in signatures[forged.key]["error"]
    assert signatures[unsigned.key] == {
        "verified": False, "error": "unsigned: no ce_signature header"
    }  # fmt: skip
