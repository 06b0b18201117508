"""A wallet killed at the worst moment loses nothing and settles nothing twice.

Real ``tavla serve wallet`` processes on the real PostgreSQL and broker, killed
with SIGKILL: first from outside right after holds were placed, then by the fail
point ``wallet.settlement.after_db_commit``, in the middle of a settlement batch:
the games' settlements, ledger transfers and Settled events are committed to the
database, the batch's Kafka offsets are not. The next process gets the batch again
and must apply none of it twice; every game ends settled once, with the amounts
of the house rules, every Settled event is on ``tavla.wallet.v1``, and
``tavla wallet audit`` (the command itself) finds the books sound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.kit.events.envelope import Envelope
from services.wallet.consumers import GAME_TOPIC, SETTLEMENT_GROUP
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import events_pb2, wallet_pb2_grpc
from tests.support.kafka import (
    committed_offsets,
    consumed_past,
    headers_of,
    mark_partitions,
    publish,
    read_events,
)
from tests.support.processes import ServeProcesses, service_environment, tavla
from tests.support.services import new_database
from tests.support.wallet import (
    GAME_STARTED_AT,
    Side,
    balance,
    fund,
    game_ended,
    new_id,
    place_hold,
)

GAMES = 6
KILL_AFTER_SETTLEMENT_COMMIT = "wallet.settlement.after_db_commit=kill"
# House rules (shared/reference, commissions): $5 single-game stake, won with a gammon,
# both rated 1500: the loser pays $10, the winner gets $9.02 ($0.49 commission each).
STAKE, LOSS, WIN = 500, 1000, 902
FUNDED, HELD = 2000, 1500
WALLET_TOPIC = "tavla.wallet.v1"
SETTLED = events_pb2.Settled.DESCRIPTOR.full_name


@dataclass(frozen=True)
class HeldGame:
    ended: game_events.GameEnded
    winner: str
    loser: str

    @property
    def settlement_id(self) -> str:
        return f"{self.ended.game_id}:{self.ended.game_number}"


async def held_game(stub: wallet_pb2_grpc.WalletServiceStub) -> HeldGame:
    """Two funded players with their stakes held at a table, and the result of their game."""
    table = new_id("t")
    sides = []
    for _ in range(2):
        player = new_id()
        await fund(stub, player, FUNDED)
        hold = await place_hold(stub, player, HELD, table)
        sides.append(Side(player, hold_id=hold.hold_id))
    ended = game_ended(
        winner=sides[0],
        loser=sides[1],
        stake=STAKE,
        result=game_pb2.RESULT_TYPE_GAMMON,
        table_id=table,
    )
    return HeldGame(ended, sides[0].player_id, sides[1].player_id)


async def settlements(url: str, ids: Sequence[str]) -> dict[str, str]:
    """Settlement id -> status, for those of ``ids`` the database holds."""
    rows = await query(url, "SELECT id, status FROM settlements WHERE id = ANY($1::text[])", ids)
    return {row["id"]: row["status"] for row in rows}


async def query(url: str, sql: str, *arguments: Any) -> list[Any]:
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    try:
        rows: list[Any] = await connection.fetch(sql, *arguments)
    finally:
        await connection.close()
    return rows


async def settled_in_outbox(url: str) -> dict[str, list[str]]:
    """Game id -> the ce_ids of the Settled events the wallet recorded for it."""
    rows = await query(url, "SELECT key, event_id, sent_at FROM outbox WHERE ce_type = $1", SETTLED)
    found: dict[str, list[str]] = {}
    for row in rows:
        assert row["sent_at"] is not None, f"Settled {row['event_id']} was never sent"
        found.setdefault(row["key"], []).append(row["event_id"])
    return found


async def test_a_wallet_killed_between_settlement_commit_and_offset_commit_settles_every_game_once(
    postgres_server: Any, kafka_broker: Any, serve: ServeProcesses
) -> None:
    url = postgres_server.url(new_database(postgres_server, "wallet_crash"))
    bootstrap = kafka_broker.bootstrap
    environment = service_environment("wallet", url, bootstrap)

    # Holds placed, then SIGKILL from outside: they are committed, so they must survive.
    first = await serve.start("wallet", environment)
    channel = first.channel()
    games = [await held_game(wallet_pb2_grpc.WalletServiceStub(channel)) for _ in range(GAMES)]
    await channel.close()
    # Whatever earlier tests left on the topic is consumed: the next batch is ours.
    marks = await mark_partitions(bootstrap, GAME_TOPIC, game_events.DiceRolled())
    async with asyncio.timeout(90):
        while not await consumed_past(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC, marks):
            await asyncio.sleep(0.2)
    await first.kill()

    # The games end while no wallet runs; the next one dies right after its first
    # batch's database commit, before the batch's offsets are committed.
    placed = await publish(
        bootstrap,
        [
            Envelope.wrap(
                topic=GAME_TOPIC, key=game.ended.game_id, message=game.ended, source="game",
                now=GAME_STARTED_AT,
            )
            for game in games
        ],
    )  # fmt: skip
    armed = serve.launch(
        "wallet", {**environment, "TAVLA_FAILPOINTS": KILL_AFTER_SETTLEMENT_COMMIT}
    )
    await armed.wait_killed(timeout=120)
    at_kill = await settlements(url, [game.settlement_id for game in games])
    committed = await committed_offsets(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC)
    settled_then = [
        (game, where)
        for game, where in zip(games, placed, strict=True)
        if game.settlement_id in at_kill
    ]
    assert settled_then, f"the kill came before any settlement commit: {armed.output()}"
    for game, (partition, offset) in settled_then:  # the worst moment: settled, not acknowledged
        assert at_kill[game.settlement_id] == "settled"
        assert committed.get(partition, -1) <= offset, "the batch's offsets were committed"

    # A new process gets the batch again: everything settles, nothing twice.
    last = await serve.start("wallet", environment)
    ids = [game.settlement_id for game in games]
    async with asyncio.timeout(120):  # the batch is acknowledged this time
        while not await consumed_past(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC, placed):
            await asyncio.sleep(0.2)
    assert await settlements(url, ids) == dict.fromkeys(ids, "settled")

    channel = last.channel()
    stub = wallet_pb2_grpc.WalletServiceStub(channel)
    for game in games:
        assert await balance(stub, game.winner) == (FUNDED - HELD + HELD + WIN, 0)
        assert await balance(stub, game.loser) == (FUNDED - LOSS, 0)
    await channel.close()

    # One Settled event per game, and the relay published each (on the topic by its ce_id).
    recorded = await settled_in_outbox(url)
    assert {game.ended.game_id: len(recorded.get(game.ended.game_id, [])) for game in games} == {
        game.ended.game_id: 1 for game in games
    }
    wanted = {recorded[game.ended.game_id][0] for game in games}
    for record in await read_events(bootstrap, WALLET_TOPIC, wanted):
        if headers_of(record)["ce_id"] in wanted:
            settled = events_pb2.Settled.FromString(record.value)
            assert (settled.winner_credit.minor_units, settled.loser_debit.minor_units) == (
                WIN,
                LOSS,
            )

    last.stop()
    status, output = await tavla("wallet", "audit", env=environment)
    assert (status, output.strip()) == (0, "audit ok")
