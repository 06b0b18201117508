"""The hot path of a player's command: one read (skipped on a cache hit) and one write.

The write is one SQL statement: ``UPDATE games ... WHERE version = expected`` and,
only for the games it updated, the action-log row, the outbox events, the timer rows
and any revealed dice seeds, all in the same implicit transaction. A concurrent
change (another call, a timer, another replica) makes the update match no row and
nothing else is written for that game. Concurrent commands on different games share
one statement (group commit, see :class:`FastStore`). The same statement notifies
``game_changed`` once per updated game (delivered at its commit to every replica's
listener: their WatchGame streams wake without polling). The session cache holds only
states read from or written to the database at a known version, so a stale entry
can never be written over a newer row: the version condition refuses it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.game.domain import Session
from services.game.metrics import WRITE_BATCH
from services.game.store import CHANGES_CHANNEL
from services.kit.errors import Unavailable
from services.kit.json_text import to_json
from services.kit.logging import get_logger

log = get_logger(__name__)

# One statement applies a batch of writes, each to its own game (never two to the same
# game): every row of ``w`` whose game is still at its expected version is updated, and
# only those games get their action-log row, events, timers and seeds.
WRITE = f"""
WITH w AS (
    SELECT * FROM unnest(
        $1::text[], $2::bigint[], $3::text[], $4::jsonb[], $5::bytea[], $6::bool[],
        $7::bool[], $8::timestamptz[], $9::int[], $10::bigint[], $11::text[], $12::jsonb[],
        $13::text[], $14::text[], $15::bytea[], $16::text[]
    ) AS w(game_id, version, status, state, seed, away0, away1, at, actor, expected,
           account_id, command, command_hash, event_type, view, client_seed)
), upd AS (
    UPDATE games g SET version = w.version, status = w.status, state = w.state,
        seed = w.seed, away0 = w.away0, away1 = w.away1, updated_at = w.at,
        seen0 = CASE WHEN w.actor = 0 THEN w.at ELSE g.seen0 END,
        seen1 = CASE WHEN w.actor = 1 THEN w.at ELSE g.seen1 END
    FROM w
    WHERE g.game_id = w.game_id AND g.version = w.expected
    RETURNING g.game_id
), act AS (
    INSERT INTO game_actions
        (game_id, version, account_id, command, command_hash, event_type, view, occurred_at)
    SELECT w.game_id, w.version, w.account_id, w.command, w.command_hash, w.event_type,
        w.view, w.at
    FROM w JOIN upd USING (game_id)
), ob AS (
    INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)
    SELECT e.event_id, e.topic, e.game_id, e.ce_type, e.payload, e.headers, e.at
    FROM unnest(
        $17::text[], $18::text[], $19::text[], $20::text[], $21::bytea[], $22::jsonb[],
        $23::timestamptz[]
    ) WITH ORDINALITY AS e(game_id, event_id, topic, ce_type, payload, headers, at, ord)
    WHERE e.game_id IN (SELECT game_id FROM upd)
    ORDER BY e.ord
), tset AS (
    INSERT INTO timers (game_id, kind, due_at)
    SELECT t.game_id, t.kind, t.due_at
    FROM unnest($24::text[], $25::text[], $26::timestamptz[]) AS t(game_id, kind, due_at)
    WHERE t.game_id IN (SELECT game_id FROM upd)
    ON CONFLICT (game_id, kind) DO UPDATE SET due_at = EXCLUDED.due_at
), tclear AS (
    DELETE FROM timers t
    USING unnest($27::text[], $28::text[]) AS c(game_id, kind)
    WHERE t.game_id = c.game_id AND t.kind = c.kind
        AND c.game_id IN (SELECT game_id FROM upd)
), seeds AS (
    INSERT INTO dice_seeds
        (game_id, game_number, commitment, server_seed, client_seed, roll_count, finished_at)
    SELECT s.game_id, s.game_number, s.commitment, s.server_seed, s.client_seed,
        s.roll_count, s.at
    FROM unnest(
        $29::text[], $30::int[], $31::text[], $32::bytea[], $33::text[], $34::int[],
        $35::timestamptz[]
    ) AS s(game_id, game_number, commitment, server_seed, client_seed, roll_count, at)
    WHERE s.game_id IN (SELECT game_id FROM upd)
)
SELECT game_id, pg_notify('{CHANGES_CHANNEL}', game_id) FROM upd
"""

# Presence only (a heartbeat, an open stream, a call that changed nothing): never
# moves the version, notifies nobody.
TOUCH = (
    "UPDATE games SET seen0 = CASE WHEN $2 = 0 THEN $3 ELSE seen0 END, "
    "seen1 = CASE WHEN $2 = 1 THEN $3 ELSE seen1 END WHERE game_id = $1"
)

READ = (
    "SELECT game_id, version, status, state, seed, updated_at, seen0, seen1, "
    "geo_address0, geo_residence0, geo_checked0, geo_address1, geo_residence1, geo_checked1 "
    "FROM games WHERE game_id = $1"
)


@dataclass(frozen=True)
class Write:
    """Everything one applied command writes."""

    session: Session
    expected_version: int
    state: str  # JSON text
    actor: int | None
    account_id: str
    command: str  # JSON text
    command_hash: str
    event_type: str
    view: bytes
    events: Sequence[
        tuple[str, str, str, bytes, dict[str, str]]
    ]  # id, topic, type, payload, headers
    timers_set: Sequence[tuple[str, datetime]]
    timers_cleared: Sequence[str]
    seeds: Sequence[tuple[int, str, bytes, int]]  # game number, commitment, seed, roll count


class SessionCache:
    """The last known session per game, each at the version the database holds(held)."""

    def __init__(self, capacity: int = 20_000) -> None:
        self._entries: OrderedDict[str, Session] = OrderedDict()
        self._capacity = capacity

    def get(self, game_id: str, version: int) -> Session | None:
        session = self._entries.get(game_id)
        if session is None or session.version != version:
            return None
        self._entries.move_to_end(game_id)
        return session

    def put(self, session: Session) -> None:
        self._entries[session.game_id] = session
        self._entries.move_to_end(session.game_id)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def drop(self, game_id: str) -> None:
        self._entries.pop(game_id, None)


@asynccontextmanager
async def _reachable() -> AsyncIterator[None]:
    """A lost database connection is UNAVAILABLE: the client retries with the same version."""
    try:
        yield
    except (OSError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError) as error:
        raise Unavailable(
            f"the game store cannot be reached ({type(error).__name__}); retry"
        ) from None


# Every row this pool's statements touch is found by key. Its statements are
# prepared once per connection and soon run with a generic plan; one made while
# the tables were small (a fresh deployment) would scan ``games`` sequentially
# until the next ANALYZE, on every write. Sequential scans are therefore off.
POOL_SETTINGS = {"enable_seqscan": "off"}


async def _no_reset(connection: Any) -> None:
    """This pool runs only single autocommit statements: no session state to reset.

    asyncpg's default reset costs one more round trip (``RESET ALL`` etc.) per call.
    """


def _arguments(batch: Sequence[Write]) -> list[list[Any]]:
    """The statement's 35 array parameters: one column per game field, flattened children."""
    games: list[list[Any]] = [[] for _ in range(16)]
    events: list[list[Any]] = [[] for _ in range(7)]
    timers: list[list[Any]] = [[] for _ in range(3)]
    cleared: list[list[Any]] = [[] for _ in range(2)]
    seeds: list[list[Any]] = [[] for _ in range(7)]
    for w in batch:
        s = w.session
        row = (
            s.game_id, s.version, s.status.value, w.state, s.seed,
            not s.presence[0].connected, not s.presence[1].connected, s.updated_at,
            -1 if w.actor is None else w.actor, w.expected_version, w.account_id,
            w.command, w.command_hash, w.event_type, w.view, s.client_seed,
        )  # fmt: skip
        _append(games, row)
        for event_id, topic, ce_type, payload, headers in w.events:
            _append(events, (s.game_id, event_id, topic, ce_type, payload, to_json(headers),
                             s.updated_at))  # fmt: skip
        for kind, due in w.timers_set:
            _append(timers, (s.game_id, kind, due))
        for kind in w.timers_cleared:
            _append(cleared, (s.game_id, kind))
        for number, commitment, seed, rolls in w.seeds:
            _append(seeds, (s.game_id, number, commitment, seed, s.client_seed, rolls,
                            s.updated_at))  # fmt: skip
    return games + events + timers + cleared + seeds


def _append(columns: list[list[Any]], row: Sequence[Any]) -> None:
    for column, value in zip(columns, row, strict=True):
        column.append(value)


@dataclass
class _Pending:
    write: Write
    done: asyncio.Future[bool]


class FastStore:
    """A small asyncpg pool for the command path (SQLAlchemy serves everything else).

    Writes are group-committed: while ``max_in_flight`` statements are running
    (one by default: it used the least CPU per command, here and in PostgreSQL),
    new writes queue, and the next statement carries all of them (up to
    ``max_batch``). An idle store sends a write at once, so batching adds no wait;
    a busy one saves a round trip, a transaction and its commit per write. A game
    is never in two running statements nor twice in one, so batches do not contend
    for rows with each other; a duplicate waits for the next batch, where the
    version condition refuses it.
    """

    def __init__(
        self,
        database_url: str,
        *,
        min_size: int = 2,
        max_size: int = 10,
        max_in_flight: int = 1,
        max_batch: int = 64,
    ) -> None:
        self._dsn = database_url.replace("postgresql+asyncpg://", "postgresql://", 1)
        self._min, self._max = min_size, max_size
        self._pool: asyncpg.Pool | None = None
        self._opening = asyncio.Lock()  # concurrent first calls open one pool, not several
        self._closed = False
        self._max_in_flight, self._max_batch = max_in_flight, max_batch
        self._queue: list[_Pending] = []
        self._busy_games: set[str] = set()
        self._flushes: set[asyncio.Task[None]] = set()
        # Pooled connections kept for the writes between statements: a pool's acquire
        # and release cost as much CPU as the statement itself (about 70 us).
        self._writers: list[asyncpg.Connection] = []

    async def _ready(self) -> asyncpg.Pool:
        if self._pool is not None:  # the hot path: open, not closed (close clears it)
            return self._pool
        async with self._opening:
            if self._closed:
                raise Unavailable("the game service is stopping; retry")
            if self._pool is None:
                self._pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=self._min,
                    max_size=self._max,
                    reset=_no_reset,
                    server_settings=POOL_SETTINGS,
                )
            return self._pool

    @property
    def queued(self) -> int:
        """Writes waiting for a statement (not counting those in one)."""
        return len(self._queue)

    async def close(self, timeout_seconds: float = 5.0) -> None:
        """Finish the running writes, then close the pool (terminated if it will not close)."""
        if self._flushes:
            await asyncio.gather(*self._flushes, return_exceptions=True)
        async with self._opening:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is None:
            return
        writers, self._writers = self._writers, []
        for connection in writers:  # a pool closes once every connection is back
            await pool.release(connection)
        try:  # a connection some cancelled call never gave back must not hold the shutdown
            await asyncio.wait_for(pool.close(), timeout_seconds)
        except TimeoutError:
            log.warning("game_pool_terminated", after_seconds=timeout_seconds)
            pool.terminate()

    async def read(self, game_id: str) -> asyncpg.Record | None:
        async with _reachable():
            pool = await self._ready()
            row: asyncpg.Record | None = await pool.fetchrow(READ, game_id)
        return row

    async def touch(self, game_id: str, player: int, at: datetime) -> None:
        """Record that ``player`` was heard from at ``at``: one autocommit statement."""
        async with _reachable():
            pool = await self._ready()
            await pool.execute(TOUCH, game_id, player, at)

    async def fetch(self, query: str, *arguments: Any) -> list[asyncpg.Record]:
        """One autocommit statement on this pool (:mod:`services.game.creation`'s)."""
        async with _reachable():
            pool = await self._ready()
            rows: list[asyncpg.Record] = await pool.fetch(query, *arguments)
        return rows

    async def write(self, w: Write) -> bool:
        """Apply ``w`` if the game is still at ``w.expected_version``; False otherwise."""
        pending = _Pending(w, asyncio.get_running_loop().create_future())
        pending.done.add_done_callback(_retrieved)  # a cancelled caller never reads it
        self._queue.append(pending)
        self._start_flushes()
        # Awaited without a shield (which costs a future and a loop turn per call): a
        # cancelled caller cancels only this future; its write stays queued or in flight
        # and is applied or refused like any other, its answer then read by no one.
        return await pending.done

    def _start_flushes(self) -> None:
        while len(self._flushes) < self._max_in_flight:
            batch = self._next_batch()
            if not batch:
                return
            task = asyncio.create_task(self._flush(batch))
            self._flushes.add(task)
            task.add_done_callback(self._flushed)

    def _flushed(self, task: asyncio.Task[None]) -> None:
        self._flushes.discard(task)
        self._start_flushes()

    def _next_batch(self) -> list[_Pending]:
        """Queued writes in order, at most one per game and none for a game in flight."""
        batch: list[_Pending] = []
        left: list[_Pending] = []
        for pending in self._queue:
            game_id = pending.write.session.game_id
            if len(batch) < self._max_batch and game_id not in self._busy_games:
                self._busy_games.add(game_id)
                batch.append(pending)
            else:
                left.append(pending)
        self._queue = left
        return batch

    async def _flush(self, batch: list[_Pending]) -> None:
        try:
            applied = await self._execute([p.write for p in batch])
        except asyncpg.PostgresError as error:
            if len(batch) == 1:
                _settle(batch, error=error)
            else:  # one bad write must not fail the others: isolate it
                for pending in batch:
                    await self._flush_alone(pending)
        except Exception as error:  # every caller hears of it
            _settle(batch, error=error)
        else:
            _settle(batch, applied=applied)
        finally:
            self._busy_games.difference_update(p.write.session.game_id for p in batch)

    async def _flush_alone(self, pending: _Pending) -> None:
        try:
            applied = await self._execute([pending.write])
        except Exception as error:
            _settle([pending], error=error)
        else:
            _settle([pending], applied=applied)

    async def _execute(self, batch: Sequence[Write]) -> set[str]:
        WRITE_BATCH.observe(len(batch))
        arguments = _arguments(batch)
        async with _reachable():
            pool = await self._ready()
            connection = self._writers.pop() if self._writers else await pool.acquire()
            try:
                rows = await connection.fetch(WRITE, *arguments)
            except BaseException:  # back to the pool, which replaces a connection it lost
                await pool.release(connection)
                raise
            if self._pool is pool:
                self._writers.append(connection)
            else:  # closed meanwhile
                await pool.release(connection)
        return {row[0] for row in rows}


def _retrieved(future: asyncio.Future[bool]) -> None:
    if not future.cancelled():
        future.exception()


def _settle(
    batch: Sequence[_Pending],
    *,
    applied: set[str] | None = None,
    error: BaseException | None = None,
) -> None:
    for pending in batch:
        if pending.done.done():
            continue
        if error is not None:
            pending.done.set_exception(error)
        else:
            assert applied is not None
            pending.done.set_result(pending.write.session.game_id in applied)
