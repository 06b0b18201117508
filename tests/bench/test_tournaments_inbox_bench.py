"""The tournaments' results inbox, in-process: CPU a result on the real PostgreSQL.

A 256-entrant scheduled tournament, RUNNING; each round's games started through the store
as the driver records them (outside the measurement); every match's ``MatchEnded``, signed
as the game publishes it, handed to the real results consumer (``handle_batch``: its inbox
transaction and its handler, the kit's group commit) in batches of 1 and of 4 events, as a
fetch of the game topic hands them over. Measured: this process's CPU
(``time.process_time``) inside ``handle_batch`` alone, a result; printed, not asserted (on
a shared machine it says as much about the neighbours). Asserted: the tournament played
out from the rows (a fresh cache), one ``MatchDecided`` and one inbox row a match.

    .venv/bin/python -m pytest -q -s tests/bench/test_tournaments_inbox_bench.py
"""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.consumer import Delivery, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.tournaments.consumers import matches_consumer
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Tournament
from services.tournaments.domain.rules import Rules, Scheduled
from services.tournaments.store import TournamentCache, TournamentRepository
from tests.support.kafka import event_verifier, kafka_headers
from tests.support.services import migrated_database
from tests.support.tournaments import match_ended

PLAYERS = 256
NOW = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


def _no_broker() -> Any:
    raise AssertionError("the batches are handed over directly")


async def _running(sessions: async_sessionmaker[AsyncSession], cache: TournamentCache) -> str:
    """A RUNNING scheduled tournament of :data:`PLAYERS`, drawn; its id."""
    start = Scheduled(NOW + timedelta(hours=2), NOW - timedelta(hours=1),
                      NOW + timedelta(hours=1), PLAYERS, PLAYERS)  # fmt: skip
    rules = Rules(start, (1,), "standard", "USD", 1_001, 99, "standard")
    tournament = Tournament(str(uuid.uuid4()), "inbox bench", rules, bytes(range(32)), NOW)
    async with sessions() as session, session.begin():
        await TournamentRepository(session, cache).add(tournament, key=tournament.id)
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        for n in range(PLAYERS):
            entrant = Entrant(str(uuid.uuid4()), f"b{n}", f"f{n}", NOW + timedelta(seconds=n))
            await repository.add_entrant(tournament.id, entrant, 0)
            tournament = lobby.register(tournament, entrant, NOW)
        await repository.save(lobby.close_registration(tournament), needs_work=False)
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        locked = await repository.get(tournament.id, lock=True)
        assert locked is not None
        await repository.save(lobby.started(locked, NOW), needs_work=False)
    return tournament.id


async def _next_round(
    sessions: async_sessionmaker[AsyncSession], cache: TournamentCache, tid: str
) -> list[Delivery]:
    """Start every ready match as the driver records it; their results (top seat wins)."""
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        locked = await repository.get(tid, lock=True)
        assert locked is not None and locked.bracket is not None
        bracket, ready = locked.bracket, locked.bracket.ready()
        for match in ready:
            bracket = brackets.start(bracket, match.id, f"{tid}:{match.id}").bracket
        await repository.save(lobby.with_bracket(locked, bracket), needs_work=False)
    delivered = []
    for n, match in enumerate(ready):
        winner, loser = brackets.order_of(match)
        envelope = match_ended(tid, f"{tid}:{match.id}", winner, loser)
        event = ReceivedEvent.from_kafka(
            envelope.topic, envelope.key.encode(), envelope.payload, kafka_headers(envelope)
        )
        delivered.append(Delivery.of(event, offset=n))
    return delivered


async def _play_out(
    consumer: EventConsumer,
    sessions: async_sessionmaker[AsyncSession],
    cache: TournamentCache,
    batch: int,
) -> tuple[str, float]:
    """One tournament's results in batches of ``batch``; its id and the CPU a result."""
    tid = await _running(sessions, cache)
    cpu, results = 0.0, 0
    while delivered := await _next_round(sessions, cache, tid):
        for at in range(0, len(delivered), batch):
            began = time.process_time()
            await consumer.handle_batch(delivered[at : at + batch])
            cpu += time.process_time() - began
            results += len(delivered[at : at + batch])
    return tid, cpu / results


@pytest.mark.parametrize("batch", [1, 4])
async def test_the_results_inbox_cpu_a_result(postgres_server: Any, batch: int) -> None:
    database = await migrated_database(postgres_server, "inbox_bench", "tournaments")
    url = postgres_server.url(database)
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    cache = TournamentCache()
    consumer = matches_consumer(
        sessions=sessions, consumer_factory=_no_broker, clock=SystemClock(), cache=cache
    )
    consumer.trust(event_verifier())
    try:
        tid, cpu = await _play_out(consumer, sessions, cache, batch)
        async with sessions() as session:  # the rows, not the cache
            stored = await TournamentRepository(session, TournamentCache()).get(tid)
            counts = (await session.execute(text(
                "SELECT (SELECT count(*) FROM outbox WHERE key = :tid), "
                "(SELECT count(*) FROM inbox)"), {"tid": tid})).one()  # fmt: skip
        assert stored is not None and stored.bracket is not None and stored.bracket.finished
        assert tuple(counts) == (PLAYERS - 1, PLAYERS - 1)
        print(f"\nresults inbox, {PLAYERS} entrants, batches of {batch}: "
              f"{1000 * cpu:.2f} ms of CPU a result")  # fmt: skip
    finally:
        await engine.dispose()
