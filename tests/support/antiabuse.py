"""Anti-abuse test helpers: the other services' events as they publish them, a compliance
officer's credentials, and reading a topic until what a test waits for is there."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from google.protobuf.message import Message

from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import events_pb2 as accounts
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import events_pb2 as wallet
from tavla.wallet.v1 import wallet_pb2
from tests.support.identity import player_token
from tests.support.kafka import consumed_past, headers_of, mark_partitions

FACTS_GROUP = "antiabuse.facts"
FACT_TOPICS = (
    "tavla.accounts.v1",
    "tavla.geo.v1",
    "tavla.game.v1",
    "tavla.wallet.v1",
    "tavla.matchmaking.v1",
)


def officer(account_id: str = "officer-1") -> list[tuple[str, str]]:
    """Call metadata of a compliance officer (an access token with the compliance role)."""
    return [("authorization", f"Bearer {player_token(account_id, roles=['compliance'])}")]


def fresh_network() -> str:
    """The first three octets of a public /24 no other test uses (in 11/8 to 99/8: outside
    the private, carrier-NAT and reserved ranges, whose addresses link nobody)."""
    return f"{random.randrange(11, 100)}.{random.randrange(256)}.{random.randrange(256)}"


def _now(message: Any) -> Any:
    message.occurred_at.FromDatetime(datetime.now(UTC))
    return message


def envelope(topic: str, key: str, message: Message, source: str) -> Envelope:
    return Envelope.wrap(
        topic=topic, key=key, message=message, source=source, now=datetime.now(UTC)
    )


def registered(account_id: str, email: str, name: str) -> Envelope:
    fact = _now(
        accounts.AccountRegistered(
            account_id=account_id, email=email, display_name=name, residence="MT", country_code="MT"
        )
    )
    return envelope("tavla.accounts.v1", account_id, fact, "accounts")


def logged_in(account_id: str, device_id: str, address: str) -> Envelope:
    fact = _now(
        accounts.LoggedIn(
            account_id=account_id,
            device_id=device_id,
            ip_address=address,
            session_id=str(uuid.uuid4()),
            country="MT",
        )
    )
    return envelope("tavla.accounts.v1", account_id, fact, "accounts")


def one_persons_accounts(helped: str, helper: str) -> list[Envelope]:
    """Two accounts one person made together at one computer (one device, two networks)."""
    device = f"dev-{uuid.uuid4().hex[:8]}"
    return [
        registered(helped, f"{helped}@example.com", "hal"),
        registered(helper, f"{helper}@example.com", "hel"),
        logged_in(helped, device, f"{fresh_network()}.10"),
        logged_in(helper, device, f"{fresh_network()}.11"),
    ]


def disconnected(game_id: str, account_id: str) -> Envelope:
    fact = _now(game.PlayerDisconnected(game_id=game_id, game_number=1, account_id=account_id))
    return envelope("tavla.game.v1", game_id, fact, "game")


def game_ended(game_id: str, winner: str, loser: str, stake: int) -> Envelope:
    fact = _now(
        game.GameEnded(
            game_id=game_id,
            table_id=str(uuid.uuid4()),
            game_number=1,
            kind=game_pb2.PLAY_KIND_MONEY_GAME,
            winner_account_id=winner,
            loser_account_id=loser,
            cube_value=1,
            points=1,
            stake=money_pb2.Money(minor_units=stake, currency="USD"),
            players=[game_pb2.Player(account_id=winner), game_pb2.Player(account_id=loser)],
        )
    )
    return envelope("tavla.game.v1", game_id, fact, "game")


def settled(game_id: str, winner: str, loser: str, amount: int) -> Envelope:
    """The wallet's settlement of a single game: the loser pays ``amount``, 5% commission."""
    commission = amount // 20
    fact = _now(
        wallet.Settled(
            game_id=game_id,
            settlement_id=str(uuid.uuid4()),
            game_number=1,
            kind=wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
            source_event_id=str(uuid.uuid4()),
            winner_account_id=winner,
            loser_account_id=loser,
            win_sum=money_pb2.Money(minor_units=amount, currency="USD"),
            commission_total=money_pb2.Money(minor_units=commission, currency="USD"),
            winner_credit=money_pb2.Money(minor_units=amount - commission, currency="USD"),
            loser_debit=money_pb2.Money(minor_units=amount, currency="USD"),
        )
    )
    return envelope("tavla.wallet.v1", game_id, fact, "wallet")


def played(game_id: str, winner: str, loser: str, amount: int) -> list[Envelope]:
    """A money game as the game and the wallet publish it: its end, then its settlement."""
    return [game_ended(game_id, winner, loser, amount), settled(game_id, winner, loser, amount)]


async def read_topic(
    bootstrap: str,
    topic: str,
    decode: Callable[[str, bytes], Message | None],
    done: Callable[[Sequence[Message]], bool],
    timeout: float = 90.0,
) -> list[Message]:
    """The decoded events of ``topic`` from the beginning, read until ``done`` says so."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[Message] = []
    try:
        numbers = consumer.partitions_for_topic(topic)
        if not numbers:
            await consumer.force_metadata_update()
            numbers = consumer.partitions_for_topic(topic) or set()
        partitions = [TopicPartition(topic, n) for n in sorted(numbers)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        async with asyncio.timeout(timeout):
            while not done(found):
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    for record in batch:
                        message = decode(headers_of(record).get("ce_type", ""), record.value)
                        if message is not None:
                            found.append(message)
    except TimeoutError:
        raise AssertionError(f"{topic} never had what the test waited for") from None
    finally:
        await consumer.stop()
    return found


async def all_consumed(
    bootstrap: str, topics: Sequence[str] = FACT_TOPICS, timeout: float = 120.0
) -> None:
    """Wait until the facts consumer committed past a mark on every partition of ``topics``."""
    ignored = accounts.AccountLocked(account_id="mark")  # no anti-abuse handler
    marks = {topic: await mark_partitions(bootstrap, topic, ignored) for topic in topics}
    async with asyncio.timeout(timeout):
        for topic, placed in marks.items():
            while not await consumed_past(bootstrap, FACTS_GROUP, topic, placed):
                await asyncio.sleep(0.2)


async def alerts_about(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, account_id: str
) -> list[antiabuse_events.ComplianceAlert]:
    response = await stub.ListAlerts(
        antiabuse_pb2.ListAlertsRequest(account_id=account_id, page_size=200),
        metadata=officer(),
    )
    return list(response.alerts)


async def wait_for_alert(
    stub: antiabuse_pb2_grpc.AntiAbuseServiceStub,
    account_id: str,
    subjects: Sequence[str],
    severity: int,
) -> antiabuse_events.ComplianceAlert:
    async with asyncio.timeout(90):
        while True:
            for alert in await alerts_about(stub, account_id):
                if sorted(alert.subject_account_ids) == sorted(subjects) and (
                    alert.severity == severity
                ):
                    return alert
            await asyncio.sleep(0.3)
