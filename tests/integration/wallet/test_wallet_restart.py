"""Killing the wallet between hold and settlement loses nothing: the real Kafka path.

Holds are placed, the service is stopped, a new one starts on the same
database, and the GameEnded published on `tavla.game.v1` is settled by its
consumer; the Settled fact then leaves through the outbox onto `tavla.wallet.v1`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from services.kit.events.envelope import Envelope
from services.wallet.audit_cli import audit_database
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import events_pb2, wallet_pb2_grpc
from tests.support.services import new_database, stop_service
from tests.support.wallet import (
    GAME_STARTED_AT,
    Side,
    balance,
    fund,
    game_ended,
    new_id,
    place_hold,
    start_wallet,
    wait_for_balance,
)


async def publish(bootstrap: str, message: game_events.GameEnded) -> None:
    envelope = Envelope.wrap(
        topic="tavla.game.v1", key=message.game_id, message=message, source="game",
        now=GAME_STARTED_AT,
    )  # fmt: skip
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            envelope.topic,
            envelope.payload,
            key=envelope.key.encode(),
            headers=envelope.kafka_headers(),
        )
    finally:
        await producer.stop()


async def settled_on_kafka(bootstrap: str, game_id: str) -> events_pb2.Settled:
    consumer = AIOKafkaConsumer(
        "tavla.wallet.v1",
        bootstrap_servers=bootstrap,
        group_id=f"test-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        async with asyncio.timeout(90):
            async for record in consumer:
                headers = {name: value.decode() for name, value in record.headers}
                if record.key == game_id.encode() and headers["ce_type"].endswith(".Settled"):
                    return events_pb2.Settled.FromString(record.value)
    finally:
        await consumer.stop()
    raise AssertionError("unreachable")


async def test_holds_survive_a_restart_and_the_game_settles_from_kafka(
    postgres_server: Any, kafka_broker: Any
) -> None:
    url = postgres_server.url(new_database(postgres_server, "wallet_restart"))
    first = await start_wallet(url, kafka_broker.bootstrap)
    stub = wallet_pb2_grpc.WalletServiceStub(first.channel)
    table = new_id("t")
    sides = []
    for _ in range(2):
        player = new_id()
        await fund(stub, player, 2000)
        hold = await place_hold(stub, player, 1500, table)
        sides.append(Side(player, hold_id=hold.hold_id))
    await stop_service(first)

    second = await start_wallet(url, kafka_broker.bootstrap)
    try:
        stub = wallet_pb2_grpc.WalletServiceStub(second.channel)
        assert await balance(stub, sides[0].player_id) == (500, 1500)
        ended = game_ended(
            winner=sides[0],
            loser=sides[1],
            stake=500,
            result=game_pb2.RESULT_TYPE_GAMMON,
            table_id=table,
        )
        await publish(kafka_broker.bootstrap, ended)
        # The new process must first join the consumer group: allow for a rebalance.
        await wait_for_balance(stub, sides[0].player_id, 2902, timeout=90)
        assert await balance(stub, sides[1].player_id) == (1000, 0)
        settled = await settled_on_kafka(kafka_broker.bootstrap, ended.game_id)
        assert settled.winner_credit.minor_units == 902
        assert settled.source_event_id
    finally:
        await stop_service(second)
    assert await audit_database(url) == ()
