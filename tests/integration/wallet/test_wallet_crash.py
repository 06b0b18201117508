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
    publish,
    read_events,
    skip_backlog,
)
from tests.support.processes import ServeProcesses, service_environment, tavla
from tests.support.services import new_database
from tests.support.wallet import (
    GAME_STARTED_AT,
    Side,
    balance,
    claim_holds,
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
    game = new_id("g")
    await claim_holds(stub, table, game, sides, HELD)  # as the game does before it starts
    ended = game_ended(
        game_id=game,
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


async def recorded_events(url: str) -> list[Any]:
    """Every event the wallet recorded (its outbox), once all of them were sent."""
    async with asyncio.timeout(180):
        while True:
            rows = await query(url, "SELECT event_id, topic, key, ce_type, sent_at FROM outbox")
            if all(row["sent_at"] is not None for row in rows):
                return rows
            await asyncio.sleep(0.1)


async def hold_stakes_then_kill(
    serve: ServeProcesses, environment: dict[str, str]
) -> list[HeldGame]:
    """Holds placed through one process, then SIGKILLed from outside."""
    # This wallet's database is new: what the module's earlier tests left on the game
    # topic is not its business.
    bootstrap = environment["TAVLA_KAFKA_BOOTSTRAP"]
    await skip_backlog(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC, game_events.DiceRolled())
    first = await serve.start("wallet", environment)
    channel = first.channel()
    games = [await held_game(wallet_pb2_grpc.WalletServiceStub(channel)) for _ in range(GAMES)]
    await channel.close()
    await first.kill()
    return games


async def wait_consumed_past(bootstrap: str, records: list[tuple[int, int]]) -> None:
    async with asyncio.timeout(120):
        while not await consumed_past(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC, records):
            await asyncio.sleep(0.2)


async def assert_killed_at_the_worst_moment(
    url: str, bootstrap: str, games: list[HeldGame], placed: list[tuple[int, int]]
) -> None:
    """Some games are settled in the database, and their offsets are not committed."""
    at_kill = await settlements(url, [game.settlement_id for game in games])
    committed = await committed_offsets(bootstrap, SETTLEMENT_GROUP, GAME_TOPIC)
    settled = [
        where for game, where in zip(games, placed, strict=True) if game.settlement_id in at_kill
    ]
    assert settled, "the kill came before any settlement was committed"
    assert set(at_kill.values()) == {"settled"}
    for partition, offset in settled:
        assert committed.get(partition, -1) <= offset, "the batch's offsets were committed"


async def assert_every_event_published_once(
    url: str, bootstrap: str, games: list[HeldGame]
) -> None:
    """One Settled event per game, and every event the wallet recorded (deposits, holds,
    settlements, from all three processes) is on the topic, looked up by its ce_id."""
    events = await recorded_events(url)
    settled: dict[str, list[str]] = {}
    for row in events:
        if row["ce_type"] == SETTLED:
            settled.setdefault(row["key"], []).append(row["event_id"])
    game_ids = [game.ended.game_id for game in games]
    assert {game_id: len(settled.get(game_id, [])) for game_id in game_ids} == dict.fromkeys(
        game_ids, 1
    )
    assert {row["topic"] for row in events} == {WALLET_TOPIC}
    published = await read_events(bootstrap, WALLET_TOPIC, {row["event_id"] for row in events})
    ours = {event_ids[0] for event_ids in settled.values()}
    for record in published:
        if headers_of(record)["ce_id"] in ours:
            message = events_pb2.Settled.FromString(record.value)
            assert (message.winner_credit.minor_units, message.loser_debit.minor_units) == (
                WIN,
                LOSS,
            )


async def test_a_wallet_killed_between_settlement_commit_and_offset_commit_settles_every_game_once(
    postgres_server: Any,
    kafka_broker: Any,
    serve: ServeProcesses,
    accounts_service: Any,
    geo_service: Any,
) -> None:
    url = postgres_server.url(new_database(postgres_server, "wallet_crash"))
    bootstrap = kafka_broker.bootstrap
    environment = service_environment(
        "wallet",
        url,
        bootstrap,
        accounts_address=accounts_service.address,
        TAVLA_GEO_ADDRESS=geo_service.address,  # the players fund themselves from Malta
    )
    games = await hold_stakes_then_kill(serve, environment)

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
    await assert_killed_at_the_worst_moment(url, bootstrap, games, placed)

    # A new process gets the batch again: everything settles, nothing twice.
    last = await serve.start("wallet", environment)
    await wait_consumed_past(bootstrap, placed)  # the batch is acknowledged this time
    ids = [game.settlement_id for game in games]
    assert await settlements(url, ids) == dict.fromkeys(ids, "settled")
    channel = last.channel()
    stub = wallet_pb2_grpc.WalletServiceStub(channel)
    for game in games:
        assert await balance(stub, game.winner) == (FUNDED + WIN, 0)  # the hold back, and won
        assert await balance(stub, game.loser) == (FUNDED - LOSS, 0)
    await channel.close()
    await assert_every_event_published_once(url, bootstrap, games)

    last.stop()
    status, output = await tavla("wallet", "audit", env=environment)
    assert (status, output.strip()) == (0, "audit ok")
