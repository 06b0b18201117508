"""The events ``tavla bench antiabuse`` adds to the game's: production's mix beside play.

Built with the producers' protos, keyed and signed as their outboxes publish them (each
with its producer's service key, so the consumer verifies them as it does any event):

- **a shared network of** ``nat_accounts`` **accounts**: each registers and logs in from
  an address of its own in one /64 (a carrier's or campus block: weak links only, which
  raise nothing and are walked by nobody's detection), on a device of its own;
- **table chat**: ordinary lines ("gl", "what a roll", "next game?") from those
  accounts, ``--chat-per-game`` per game the load finished (and as many per game the
  live phase is expected to finish);
- **planted abusers**, whose alerts are timed: a harasser's third message blocked as
  offensive (chat abuse, MEDIUM) and the second account's login on a device another
  account already used, both signed up together (multi-accounting, HIGH). Each is one
  *completing* event: the bench notes when it was sent and when the alert naming its
  subjects appeared on ``tavla.compliance.alerts.v1``.

``MatchAnalysed`` is not built here: the real analysis service analyses the load's
finished games and publishes it (``bench.py``).
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from google.protobuf.message import Message

from services.kit.benchstack import BenchKeys
from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.antiabuse.v1 import events_pb2 as antiabuse
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2

ALERTS_TOPIC = "tavla.compliance.alerts.v1"
ORDINARY_CHAT = ("gl", "gg", "nice roll", "what a roll that was", "next game?",
                 "thanks for the game", "the other table is slow today", "wp")  # fmt: skip
OFFENSIVE_WORDS = ("idiot", "loser", "clown")


@dataclass(frozen=True)
class Outgoing:
    """One event to publish: its topic, key, producing service and message."""

    topic: str
    key: str
    source: str
    message: Message


@dataclass
class Planted:
    """An abuser: the events before its completing one, the completing one, its subjects."""

    before: list[Outgoing]
    completing: Outgoing
    subjects: tuple[str, ...]
    detector: str
    sent_at: float = 0.0  # time.time() when the completing event was sent
    alerted_at: float | None = None  # the alert's record timestamp


@dataclass
class Mix:
    background: list[Outgoing] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)
    shared_network: list[str] = field(default_factory=list)  # its accounts


def _stamped(message: Message) -> Message:
    message.occurred_at.FromDatetime(datetime.now(UTC))  # type: ignore[attr-defined]
    return message


def _new_id() -> str:
    return str(uuid.uuid4())


def registered(account: str) -> Outgoing:
    fact = accounts.AccountRegistered(
        account_id=account, email=f"{account}@example.com", display_name=f"p{account[:6]}",
        residence="MT", country_code="MT",
    )  # fmt: skip
    return Outgoing("tavla.accounts.v1", account, "accounts", fact)


def logged_in(account: str, device: str, address: str) -> Outgoing:
    fact = accounts.LoggedIn(account_id=account, device_id=device, ip_address=address,
                             session_id=_new_id(), country="MT")  # fmt: skip
    return Outgoing("tavla.accounts.v1", account, "accounts", fact)


def chat(account: str, recipient: str, text: str, blocked: Sequence[str] = ()) -> Outgoing:
    game_id = _new_id()
    fact = game.ChatMessagePosted(
        game_id=game_id, message_id=_new_id(), table_id=_new_id(), account_id=account,
        recipient_account_id=recipient, text=text,
        status=game_pb2.CHAT_STATUS_BLOCKED if blocked else game_pb2.CHAT_STATUS_DELIVERED,
        blocked_reasons=list(blocked), seq=1,
    )  # fmt: skip
    return Outgoing("tavla.game.v1", game_id, "game", fact)


def shared_network(count: int, rng: random.Random) -> tuple[list[str], list[Outgoing]]:
    """``count`` accounts on one /64 (an address each) and a device each."""
    block = "2a02:" + ":".join(f"{rng.randrange(0x100, 0xFFFF):x}" for _ in range(3))
    members = [_new_id() for _ in range(count)]
    events = [registered(a) for a in members]
    events += [logged_in(a, f"dev-{a[:12]}", f"{block}::{i + 1:x}") for i, a in enumerate(members)]
    return members, events


def ordinary_chat(members: Sequence[str], count: int, rng: random.Random) -> list[Outgoing]:
    lines = []
    for _ in range(count):
        sender, recipient = rng.sample(list(members), 2)
        lines.append(chat(sender, recipient, rng.choice(ORDINARY_CHAT)))
    return lines


def harasser(rng: random.Random) -> Planted:
    sender, victim = _new_id(), _new_id()
    lines = [chat(sender, victim, f"you {rng.choice(OFFENSIVE_WORDS)}", ["offensive_language"])
             for _ in range(3)]  # fmt: skip
    return Planted(lines[:2], lines[2], (sender,), "chat_abuse")


def device_pair(rng: random.Random) -> Planted:
    first, second = sorted((_new_id(), _new_id()))
    device = f"dev-shared-{uuid.uuid4().hex[:12]}"
    address = f"81.{rng.randrange(2, 90)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    other = f"82.{rng.randrange(2, 90)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"
    return Planted([registered(first), registered(second), logged_in(first, device, address)],
                   logged_in(second, device, other), (first, second), "multi_accounting")


def build(nat_accounts: int, chat_lines: int, live_chat_lines: int, planted: int,
          seed: int) -> tuple[Mix, Mix]:
    """The backlog's mix (drained) and the live phase's (timed): the shared network and
    chat in the first, the planted abusers with more chat in the second."""
    rng = random.Random(seed)
    members, nat = shared_network(nat_accounts, rng)
    backlog = Mix(background=nat + ordinary_chat(members, chat_lines, rng),
                  shared_network=members)
    abusers = [(harasser if i % 2 else device_pair)(rng) for i in range(planted)]
    live = Mix(background=ordinary_chat(members, live_chat_lines, rng), planted=abusers)
    return backlog, live


class Publisher:
    """Signs each event with its producer's key and sends it, as the outbox relays do."""

    def __init__(self, bootstrap: str, keys: BenchKeys) -> None:
        self._producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        self._keys = keys
        self._signers: dict[str, object] = {}

    async def __aenter__(self) -> Publisher:
        await self._producer.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self._producer.stop()

    async def send(self, events: Sequence[Outgoing]) -> None:
        sent = []
        for event in events:
            message = _stamped(event.message)
            envelope = Envelope.wrap(topic=event.topic, key=event.key, message=message,
                                     source=event.source, now=datetime.now(UTC))  # fmt: skip
            signer = self._keys.event_signer(event.source)
            sent.append(await self._producer.send(
                event.topic, envelope.payload, key=envelope.key.encode(),
                headers=envelope.kafka_headers(signer),
            ))  # fmt: skip
        await asyncio.gather(*sent)

    async def paced(self, mix: Mix, seconds: float) -> None:
        """The live mix spread evenly over ``seconds``: each planted abuser's events before
        its completing one, then the completing one (its send time noted)."""
        steps: list[Outgoing | Planted] = [*mix.background, *mix.planted]
        random.Random(len(steps)).shuffle(steps)
        gap = seconds / max(1, len(steps))
        started = time.monotonic()
        for index, step in enumerate(steps):
            await asyncio.sleep(max(0.0, started + index * gap - time.monotonic()))
            if isinstance(step, Planted):
                await self.send(step.before)
                await asyncio.sleep(0.2)  # its earlier events go ahead (other partitions)
                step.sent_at = time.time()
                await self.send([step.completing])
            else:
                await self.send([step])


async def alerts_naming(bootstrap: str, accounts: Sequence[str], detector: str,
                        marks: Mapping[TopicPartition, int]) -> int:
    """The alerts of ``detector`` on the compliance topic that name one of ``accounts``,
    read from its start up to ``marks`` (a record put at the end of each partition)."""
    named = set(accounts)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: set[str] = set()
    try:
        consumer.assign(list(marks))
        for partition in marks:
            consumer.seek(partition, 0)
        while [p for p, offset in marks.items() if await consumer.position(p) <= offset]:
            batches = await consumer.getmany(timeout_ms=1000)
            for record in (r for batch in batches.values() for r in batch):
                headers = {k: v.decode() for k, v in record.headers or ()}
                if headers.get("ce_type") != antiabuse.ComplianceAlert.DESCRIPTOR.full_name:
                    continue
                alert = antiabuse.ComplianceAlert.FromString(record.value or b"")
                if alert.detector == detector and named & set(alert.subject_account_ids):
                    found.add(alert.alert_id)
    finally:
        await consumer.stop()
    return len(found)


async def await_alerts(bootstrap: str, planted: Sequence[Planted], within: float) -> None:
    """Read the compliance topic from its start until each planted abuser's first alert
    naming exactly its subjects is there (or ``within`` seconds pass): its timestamp."""
    wanted = {(p.detector, p.subjects): p for p in planted}
    consumer = AIOKafkaConsumer(ALERTS_TOPIC, bootstrap_servers=bootstrap,
                                auto_offset_reset="earliest", enable_auto_commit=False)  # fmt: skip
    await consumer.start()
    deadline = time.monotonic() + within
    try:
        while time.monotonic() < deadline and any(p.alerted_at is None for p in planted):
            batches = await consumer.getmany(timeout_ms=500)
            for record in (r for batch in batches.values() for r in batch):
                headers = {k: v.decode() for k, v in record.headers or ()}
                if headers.get("ce_type") != antiabuse.ComplianceAlert.DESCRIPTOR.full_name:
                    continue
                alert = antiabuse.ComplianceAlert.FromString(record.value or b"")
                found = wanted.get((alert.detector, tuple(sorted(alert.subject_account_ids))))
                if found is not None and found.alerted_at is None:
                    found.alerted_at = record.timestamp / 1000
    finally:
        await consumer.stop()


def latencies(planted: Sequence[Planted]) -> list[float]:
    return sorted(p.alerted_at - p.sent_at for p in planted if p.alerted_at is not None)

