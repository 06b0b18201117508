"""The tournaments' store on the real PostgreSQL: a bracket as a row per match, a save that
writes only the matches a change touched, the cache of committed aggregates, reads
without a transaction around them (and refused writes there), the results consumer
flagging the driver only for a result that leaves it work, a batch's results saved in one
transaction, and migration 0004 moving a stored bracket document into match rows and back.

What a save wrote is read from PostgreSQL itself (each row's ``xmin``, the transaction
that last wrote it), not from the store.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.kit.events.consumer import Delivery
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.migrate import upgrade_async
from services.tournaments import messages
from services.tournaments.consumers import MatchResults, matches_consumer
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.lobby import Entrant, Status, Tournament
from services.tournaments.domain.rules import Rules, SitAndGo
from services.tournaments.store import (
    ReadingUnitOfWork,
    ReadOnlyWork,
    TournamentCache,
    TournamentRepository,
    TournamentsUnitOfWork,
    reading_sessions,
)
from tavla.tournaments.v1 import events_pb2
from tests.support.kafka import event_verifier, kafka_headers
from tests.support.services import migrate_step, new_database
from tests.support.tournaments import match_ended

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
PLAYERS = [f"player-{n}" for n in range(8)]
_WRITTEN = "SELECT round, position, xmin::text FROM tournament_matches WHERE tournament_id = $1"


def _tournament() -> Tournament:
    rules = Rules(SitAndGo(8), (1,), "blitz", "USD", 1_001, 99, "standard")
    return Tournament(str(uuid.uuid4()), "Sit & Go 8", rules, bytes(range(32)), NOW)


@pytest.fixture(scope="module")
async def store(postgres_server: Any) -> AsyncIterator[tuple[str, str]]:
    name = new_database(postgres_server, "tournaments_store")
    url = postgres_server.url(name)
    await upgrade_async("tournaments", url)
    yield url, postgres_server.dsn(name)


async def _seated(sessions: async_sessionmaker[AsyncSession], cache: TournamentCache) -> str:
    """An 8-seat Sit & Go, full and drawn (SEATED), stored; its id."""
    tournament = _tournament()
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        await repository.add(tournament, key=tournament.id)
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        for n, player in enumerate(PLAYERS):
            entrant = Entrant(player, f"{player}-b", f"{player}-f", NOW + timedelta(seconds=n))
            await repository.add_entrant(tournament.id, entrant, 0)
            tournament = lobby.register(tournament, entrant, NOW)
        await repository.save(lobby.close_registration(tournament), needs_work=True)
    return tournament.id


async def _change(
    sessions: async_sessionmaker[AsyncSession],
    cache: TournamentCache,
    tournament_id: str,
    change: Any,
) -> Tournament:
    """Lock, apply ``change`` to the bracket, save, commit; the tournament saved."""
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        locked = await repository.get(tournament_id, lock=True)
        assert locked is not None and locked.bracket is not None
        after = lobby.with_bracket(locked, change(locked.bracket).bracket)
        await repository.save(after, needs_work=True)
    return after


async def _written(dsn: str, tournament_id: str) -> dict[tuple[int, int], str]:
    connection = await asyncpg.connect(dsn)
    try:
        rows = await connection.fetch(_WRITTEN, tournament_id)
    finally:
        await connection.close()
    return {(row["round"], row["position"]): row["xmin"] for row in rows}


async def test_a_change_writes_only_the_matches_it_touched(store: tuple[str, str]) -> None:
    url, dsn = store
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    cache = TournamentCache()
    try:
        tid = await _seated(sessions, cache)
        drawn = await _written(dsn, tid)
        assert sorted(drawn) == [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0)]

        started = await _change(sessions, cache, tid, lambda b: brackets.start(b, "r1m2", "g1"))
        after_start = await _written(dsn, tid)
        assert {k for k in drawn if after_start[k] != drawn[k]} == {(1, 1)}

        winner = brackets.order_of(started.bracket.match("r1m2"))[1]  # type: ignore[union-attr]
        await _change(
            sessions, cache, tid,
            lambda b: brackets.record_result(b, "r1m2", game_id="g1", winner=winner),
        )  # fmt: skip
        after_result = await _written(dsn, tid)
        # The match, and the seat its winner takes in round 2 (r2m1's bottom seat).
        assert {k for k in drawn if after_result[k] != after_start[k]} == {(1, 1), (2, 0)}

        async with sessions() as session:  # read back from the rows, not from the cache
            loaded = await TournamentRepository(session, TournamentCache()).get(tid)
        assert loaded is not None and loaded.bracket is not None
        assert loaded.bracket.match("r2m1").players == (None, winner)
        assert loaded.bracket.match("r1m2").decision is brackets.Decision.PLAYED
    finally:
        await engine.dispose()


async def test_the_cache_holds_only_what_committed_and_yields_to_another_replica(
    store: tuple[str, str],
) -> None:
    url, _ = store
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    mine, other = TournamentCache(), TournamentCache()  # two replicas' processes
    try:
        tid = await _seated(sessions, mine)
        async with sessions() as session:
            first = await TournamentRepository(session, mine).get(tid)
            again = await TournamentRepository(session, mine).get(tid)
        assert first is not None and first is again  # the committed state, cached

        async with sessions() as session:  # a change rolled back is never cached
            repository = TournamentRepository(session, mine)
            locked = await repository.get(tid, lock=True)
            assert locked is not None
            await repository.save(replace(locked, status=Status.RUNNING), needs_work=True)
            await session.rollback()
        async with sessions() as session:
            now = await TournamentRepository(session, mine).get(tid)
        assert now is first and now.status is Status.SEATED

        # The other replica starts a game; this one's cached state is an older version.
        await _change(sessions, other, tid, lambda b: brackets.start(b, "r1m1", "g-other"))
        async with sessions() as session:
            seen = await TournamentRepository(session, mine).get(tid, lock=True)
        assert seen is not None and seen.bracket is not None
        assert seen.bracket.match("r1m1").game_id == "g-other"
    finally:
        await engine.dispose()


async def test_a_read_without_the_lock_is_cached_and_never_given_out_stale(
    store: tuple[str, str],
) -> None:
    """A replica's lobby reads a tournament another replica changed once, then from its
    cache; after a read that a commit raced (the tournament's row read before the change,
    its matches after) the next read shows the change, and is cached in turn."""
    url, _ = store
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    reads = reading_sessions(engine)
    mine, other = TournamentCache(), TournamentCache()
    try:
        tid = await _seated(sessions, other)
        async with reads() as session:
            first = await TournamentRepository(session, mine, reading=True).get(tid)
        async with reads() as session:
            again = await TournamentRepository(session, mine, reading=True).get(tid)
        assert first is not None and again is first  # read once, then cached

        await _change(sessions, other, tid, lambda b: brackets.start(b, "r1m1", "g-1"))
        async with reads() as session:
            repository = TournamentRepository(session, mine, reading=True)
            read_matches = repository._bracket

            async def raced(row: Any) -> brackets.Bracket | None:
                """The row read, another replica commits a game and the start (the row's
                status), then the matches are read."""
                async with sessions() as session, session.begin():
                    writer = TournamentRepository(session, other)
                    locked = await writer.get(tid, lock=True)
                    assert locked is not None and locked.bracket is not None
                    bracket = brackets.start(locked.bracket, "r1m2", "g-2").bracket
                    changed = replace(locked, bracket=bracket, status=Status.RUNNING)
                    await writer.save(changed, needs_work=True)
                return await read_matches(row)

            repository._bracket = raced  # type: ignore[method-assign]
            await repository.get(tid)
            listed = await repository.listed([], "USD", 100)
        assert any(t.id == tid for t in listed)
        async with reads() as session:
            after = await TournamentRepository(session, mine, reading=True).get(tid)
        assert after is not None and after.bracket is not None
        assert [after.bracket.match(m).game_id for m in ("r1m1", "r1m2")] == ["g-1", "g-2"]
        assert after.status is Status.RUNNING
        async with reads() as session:
            assert await TournamentRepository(session, mine, reading=True).get(tid) is after
    finally:
        await engine.dispose()


def test_cached_entrants_are_in_the_stored_order_whatever_order_they_committed_in() -> None:
    tournament = _tournament()
    late = Entrant("z", "b", "f", NOW + timedelta(seconds=2))
    early = Entrant("a", "b", "f", NOW + timedelta(seconds=1))
    cache = TournamentCache()
    cache.put(3, replace(tournament, entrants=(late, early)))
    cached = cache.get(tournament.id, 3)
    assert cached is not None and cached.entrants == (early, late)
    cache.put(2, tournament)  # an older commit arriving late replaces nothing
    assert cache.get(tournament.id, 3) is cached and cache.get(tournament.id, 2) is None
    changed = replace(cached, cancel_reason="a change that keeps the entrants")
    cache.put(4, changed)  # the entrants already stored, in their order: kept as they are
    assert cache.get(tournament.id, 4) is changed
    later = Entrant("m", "b", "f", NOW)  # another entrant, committed before both: sorted
    cache.put(5, replace(changed, entrants=(*changed.entrants, later)))
    kept = cache.get(tournament.id, 5)
    assert kept is not None and kept.entrants == (later, early, late)


async def test_concurrent_changes_in_one_process_never_read_the_tournament_back(
    store: tuple[str, str],
) -> None:
    """Changes waiting on the row lock (the driver creates a round's games 16 at a time)
    each find the version the one before committed, often before this process has read
    that COMMIT's answer: they wait for it and take its state from the cache, reading no
    registration and no match row (a 1,024-entrant tournament's whole rows otherwise)."""
    url, _ = store
    engine = make_engine(url)
    cache = TournamentCache()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    tid = await _seated(sessions, cache)
    rows_read: list[str] = []

    def reads_rows(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if "FROM registrations" in statement or "FROM tournament_matches" in statement:
            rows_read.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", reads_rows)

    async def change(n: int) -> None:
        async with TournamentsUnitOfWork(
            sessions, source="test", clock=SystemClock(), cache=cache
        ) as uow:
            locked = await uow.tournaments.get(tid, lock=True)
            assert locked is not None
            await uow.tournaments.save(replace(locked, cancel_reason=f"c{n}"), needs_work=None)
            await uow.commit()

    try:
        await asyncio.gather(*(change(n) for n in range(48)))
        assert rows_read == []
        async with sessions() as session:  # from the rows: what the cache holds
            stored = await TournamentRepository(session, TournamentCache()).get(tid)
            cached = await TournamentRepository(session, cache).get(tid)
        assert stored is not None and stored.cancel_reason.startswith("c")
        assert cached is not None and cached.cancel_reason == stored.cancel_reason
    finally:
        await engine.dispose()


_OLD_BRACKET = {
    "field": 3,
    "order": ["a", "b", "c"],
    "rounds": [
        [
            {"players": ["a", None], "game_id": "", "winner": "a", "decision": "bye"},
            {"players": ["b", "c"], "game_id": "g1", "winner": "c", "decision": "played"},
        ],
        [{"players": ["a", "c"], "game_id": "", "winner": None, "decision": None}],
    ],
}
_INSERT_OLD = """
INSERT INTO tournaments (tournament_id, name, idempotency_key, rules, currency, seed, status,
                         bracket, version, needs_work, cancel_reason, created_at)
VALUES ('t-old', 'Old', 'k-old', $1::jsonb, 'USD', $2, 'running', $3::jsonb, 7, false, '', now())
"""


async def test_migration_0004_moves_a_stored_bracket_into_match_rows_and_back(
    postgres_server: Any,
) -> None:
    name = new_database(postgres_server, "tournaments_0004")
    url = postgres_server.url(name)
    await migrate_step("tournaments", url, "up", "0003")
    rules = {
        "sitAndGo": {"seats": 4}, "matchLengths": [1], "clock": "blitz", "currency": "USD",
        "buyIn": "1001", "entryFee": "99", "prizeTable": "standard",
    }  # fmt: skip
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await connection.execute(
            _INSERT_OLD, json.dumps(rules), bytes(range(32)), json.dumps(_OLD_BRACKET)
        )
        await migrate_step("tournaments", url, "up", "0004")
        engine = make_engine(url)
        try:
            async with async_sessionmaker(engine)() as session:
                moved = await TournamentRepository(session, TournamentCache()).get("t-old")
        finally:
            await engine.dispose()
        assert moved is not None and moved.bracket is not None
        assert moved.bracket.order == ("a", "b", "c")
        shown = [
            (m.id, m.players, m.game_id, m.winner, m.decision) for m in moved.bracket.matches()
        ]
        assert shown == [
            ("r1m1", ("a", None), "", "a", brackets.Decision.BYE),
            ("r1m2", ("b", "c"), "g1", "c", brackets.Decision.PLAYED),
            ("r2m1", ("a", "c"), "", None, None),
        ]

        await migrate_step("tournaments", url, "down", "0003")
        back = await connection.fetchval(
            "SELECT bracket FROM tournaments WHERE tournament_id = 't-old'"
        )
        assert json.loads(back) == _OLD_BRACKET
    finally:
        await connection.close()


def _logging_statements(engine: Any, logged: list[str]) -> None:
    """The first word of every query asyncpg sends as text (BEGIN, COMMIT and ROLLBACK among
    them) goes to ``logged``, for each connection ``engine`` opens. asyncpg calls its query
    loggers soon after, not at once: :func:`_sent` waits for them."""

    def attach(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.driver_connection.add_query_logger(
            lambda record: logged.append(record.query.split()[0].rstrip(";").upper())
        )

    event.listen(engine.sync_engine, "connect", attach)


async def _sent(logged: list[str]) -> list[str]:
    for _ in range(3):
        await asyncio.sleep(0)
    sent = list(logged)
    logged.clear()
    return sent


async def test_a_reading_unit_of_work_sends_no_begin_and_no_rollback(
    store: tuple[str, str],
) -> None:
    url, _ = store
    engine = make_engine(url)
    logged: list[str] = []
    _logging_statements(engine, logged)
    cache = TournamentCache()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    reading = partial(
        ReadingUnitOfWork, reading_sessions(engine), source="test", clock=SystemClock(),
        cache=cache,
    )  # fmt: skip
    in_transaction = partial(
        TournamentsUnitOfWork, sessions, source="test", clock=SystemClock(), cache=cache
    )
    try:
        tid = await _seated(sessions, cache)
        await _sent(logged)
        async with in_transaction() as uow:  # the same read in a transaction, for contrast
            assert await uow.tournaments.get(tid) is not None
        assert await _sent(logged) == ["BEGIN", "ROLLBACK"]

        async with reading() as uow:
            found = await uow.tournaments.get(tid)
            due = await uow.tournaments.due(NOW + timedelta(days=1))
        assert found is not None and found.status is Status.SEATED and tid in due
        # The version read is sent by asyncpg itself (a SELECT); no transaction around it.
        assert not {"BEGIN", "COMMIT", "ROLLBACK"} & set(await _sent(logged))
    finally:
        await engine.dispose()


async def test_a_locked_change_is_its_lock_and_one_save_with_its_event(
    store: tuple[str, str],
) -> None:
    """A change's transaction (the driver's record of a game, a start) sends BEGIN, the
    lock, the save with its event, and COMMIT, on the asyncpg connection: no statement of
    the ORM's. Its event reaches the outbox and wakes the relay only once committed."""
    url, dsn = store
    engine = make_engine(url)
    logged: list[str] = []
    _logging_statements(engine, logged)
    cache = TournamentCache()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    woken: list[str] = []
    changing = partial(
        TournamentsUnitOfWork, sessions, source="test", clock=SystemClock(), cache=cache,
        on_commit=lambda: woken.append("relay"),
    )  # fmt: skip
    connection = await asyncpg.connect(dsn)
    try:
        tid = await _seated(sessions, cache)
        await _sent(logged)
        for commit in (False, True):
            async with changing() as uow:
                locked = await uow.tournaments.get(tid, lock=True)
                assert locked is not None
                started = uow.event(
                    messages.TOPIC, tid, events_pb2.TournamentStarted(tournament_id=tid)
                )
                await uow.tournaments.save(
                    lobby.started(locked, NOW), needs_work=True, events=[started]
                )
                if commit:
                    await uow.commit()
            end = "COMMIT" if commit else "ROLLBACK"
            assert await _sent(logged) == ["BEGIN", "SELECT", "WITH", end]
            assert woken == (["relay"] if commit else [])
            outbox = await connection.fetchval(
                "SELECT count(*) FROM outbox WHERE event_id = $1", started.event_id
            )
            status = await connection.fetchval(
                "SELECT status FROM tournaments WHERE tournament_id = $1", tid
            )
            assert (outbox, status) == ((1, "running") if commit else (0, "seated"))
    finally:
        await connection.close()
        await engine.dispose()


async def test_a_reading_unit_of_work_refuses_to_write_lock_or_commit(
    store: tuple[str, str],
) -> None:
    url, dsn = store
    engine = make_engine(url)
    cache = TournamentCache()
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    reading = partial(
        ReadingUnitOfWork, reading_sessions(engine), source="test", clock=SystemClock(),
        cache=cache,
    )  # fmt: skip
    try:
        tid = await _seated(sessions, cache)
        before = await _written(dsn, tid)
        async with reading() as uow:
            found = await uow.tournaments.get(tid)
            assert found is not None
            with pytest.raises(ReadOnlyWork):  # each statement would commit on its own
                await uow.tournaments.save(replace(found, status=Status.RUNNING), needs_work=False)
            with pytest.raises(ReadOnlyWork):  # a lock would end with its statement
                await uow.tournaments.get(tid, lock=True)
            with pytest.raises(ReadOnlyWork):
                await uow.commit()
        async with sessions() as session:  # from the rows: nothing was written
            stored = await TournamentRepository(session, TournamentCache()).get(tid)
        assert stored is not None and stored.status is Status.SEATED
        assert await _written(dsn, tid) == before
    finally:
        await engine.dispose()


async def _running_with_games(
    sessions: async_sessionmaker[AsyncSession], cache: TournamentCache
) -> Tournament:
    """The 8-seat Sit & Go of :func:`_seated`, RUNNING, its first round's games created and
    the driver's flag cleared (as the driver leaves it)."""
    tid = await _seated(sessions, cache)
    async with sessions() as session, session.begin():
        repository = TournamentRepository(session, cache)
        locked = await repository.get(tid, lock=True)
        assert locked is not None and locked.bracket is not None
        bracket = locked.bracket
        for match in bracket.rounds[0]:
            bracket = brackets.start(bracket, match.id, f"game-{match.id}").bracket
        running = lobby.with_bracket(lobby.started(locked, NOW), bracket)
        await repository.save(running, needs_work=False)
    return running


def _ended(tournament: Tournament, match_id: str) -> ReceivedEvent:
    """The game's MatchEnded for ``match_id``, its top seat the winner."""
    assert tournament.bracket is not None
    match = tournament.bracket.match(match_id)
    winner, loser = brackets.order_of(match)
    envelope = match_ended(tournament.id, match.game_id, winner, loser)
    return ReceivedEvent.from_kafka(
        envelope.topic, envelope.key.encode(), envelope.payload,
        envelope.kafka_headers(),
    )  # fmt: skip


async def _stored_bracket(sessions: Any, tournament_id: str) -> brackets.Bracket:
    """The tournament's bracket read from its rows, not from any cache."""
    async with sessions() as session:
        stored = await TournamentRepository(session, TournamentCache()).get(tournament_id)
    assert stored is not None and stored.bracket is not None
    return stored.bracket


async def _needs_work(dsn: str, tournament_id: str) -> bool:
    connection = await asyncpg.connect(dsn)
    try:
        found = await connection.fetchval(
            "SELECT needs_work FROM tournaments WHERE tournament_id = $1", tournament_id
        )
    finally:
        await connection.close()
    return bool(found)


async def test_a_result_flags_and_wakes_the_driver_only_when_it_leaves_a_match_to_create(
    store: tuple[str, str],
) -> None:
    url, dsn = store
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    cache = TournamentCache()
    woken: list[str] = []
    results = MatchResults(
        SystemClock(), "tournaments", cache,
        on_commit=lambda: woken.append("relay"), on_work=lambda: woken.append("driver"),
    )  # fmt: skip

    async def consume(event: ReceivedEvent) -> None:
        async with sessions() as session, session.begin():
            await results.match_ended(session, event)

    try:
        running = await _running_with_games(sessions, cache)
        tid = running.id
        # r1m1's winner waits for r1m2's: nothing for the driver, its MatchDecided for the relay.
        await consume(_ended(running, "r1m1"))
        assert woken == ["relay"] and not await _needs_work(dsn, tid)
        # r1m2's winner completes r2m1: its game to create.
        await consume(_ended(running, "r1m2"))
        assert woken == ["relay", "driver"] and await _needs_work(dsn, tid)
        # A result that leaves no work keeps a flag set before it (r2m1 is still to create).
        await consume(_ended(running, "r1m3"))
        assert woken == ["relay", "driver", "relay"] and await _needs_work(dsn, tid)
        bracket = await _stored_bracket(sessions, tid)
        assert [m.id for m in bracket.ready()] == ["r2m1"]
        assert bracket.match("r2m2").players[0] is not None
    finally:
        await engine.dispose()


def _delivered(envelopes: list[Envelope]) -> list[Delivery]:
    """The game's events signed as the game publishes them, as one fetched batch."""
    return [
        Delivery.of(
            ReceivedEvent.from_kafka(e.topic, e.key.encode(), e.payload, kafka_headers(e)),
            offset=n,
        )
        for n, e in enumerate(envelopes)
    ]


def _no_broker() -> Any:
    raise AssertionError("the batch is handed over directly")


async def _row_state(dsn: str, tournament_id: str) -> tuple[int, str, int]:
    """The tournament row's version and xmin, and its MatchDecided events in the outbox."""
    connection = await asyncpg.connect(dsn)
    try:
        row = await connection.fetchrow(
            "SELECT version, xmin::text AS xmin FROM tournaments WHERE tournament_id = $1",
            tournament_id,
        )
        decided = await connection.fetchval(
            "SELECT count(*) FROM outbox WHERE key = $1 AND ce_type = $2",
            tournament_id, events_pb2.MatchDecided.DESCRIPTOR.full_name,
        )  # fmt: skip
    finally:
        await connection.close()
    return row["version"], row["xmin"], decided


async def test_a_batch_of_results_is_one_transaction_saving_the_tournament_once(
    store: tuple[str, str],
) -> None:
    url, dsn = store
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    cache = TournamentCache()
    woken: list[str] = []
    consumer = matches_consumer(
        sessions=sessions, consumer_factory=_no_broker, clock=SystemClock(), cache=cache,
        on_commit=lambda: woken.append("relay"), on_work=lambda: woken.append("driver"),
    )  # fmt: skip
    consumer.trust(event_verifier())
    try:
        running = await _running_with_games(sessions, cache)
        tid = running.id
        assert running.bracket is not None
        games = {m.id: m for m in running.bracket.rounds[0]}
        drawn = await _written(dsn, tid)
        version, _, _ = await _row_state(dsn, tid)

        def ended(match_id: str, *, top_wins: bool = True) -> Envelope:
            winner, loser = brackets.order_of(games[match_id])
            if not top_wins:
                winner, loser = loser, winner
            return match_ended(tid, games[match_id].game_id, winner, loser)

        twice = ended("r1m3")
        await consumer.handle_batch(_delivered([
            ended("r1m1"),
            ended("r1m2"),
            ended("r1m1", top_wins=False),  # contradicts r1m1's result: refused alone
            twice,
            twice,  # a redelivery meeting its first delivery in the batch
        ]))  # fmt: skip

        written = await _written(dsn, tid)
        changed = {k for k in drawn if written[k] != drawn[k]}
        # r1m1, r1m2 and r1m3, and the seats their winners take in round 2: one transaction.
        assert changed == {(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)}
        after, row_xmin, decided = await _row_state(dsn, tid)
        assert len({written[k] for k in changed} | {row_xmin}) == 1
        assert after == version + 1 and decided == 3
        assert woken == ["driver"]  # r2m1 has both its players: its game to create
        bracket = await _stored_bracket(sessions, tid)
        tops = [brackets.order_of(games[m])[0] for m in ("r1m1", "r1m2", "r1m3")]
        assert bracket.match("r2m1").players == (tops[0], tops[1])
        assert bracket.match("r2m2").players == (tops[2], None)
        assert [m.id for m in bracket.ready()] == ["r2m1"]
    finally:
        await engine.dispose()
