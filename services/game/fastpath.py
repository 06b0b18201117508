"""The hot path of a player's command: one read (skipped on a cache hit) and one write.

The write is a single SQL statement: ``UPDATE games ... WHERE version = expected``
and, only if that row was updated, the action-log row, the outbox events, the timer
rows and any revealed dice seeds, all in the same implicit transaction. A concurrent
change (another call, a timer, another replica) makes the update match no row and
nothing else is written. The session cache holds only states read from or written
to the database at a known version, so a stale entry can never be written over a
newer row: the version condition refuses it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]

from services.game.domain import Session
from services.kit.errors import Unavailable

_WRITE = """
WITH upd AS (
    UPDATE games SET version = $2, status = $3, state = $4::jsonb, seed = $5,
        away0 = $6, away1 = $7, updated_at = $8,
        seen0 = CASE WHEN $9 = 0 THEN $8 ELSE seen0 END,
        seen1 = CASE WHEN $9 = 1 THEN $8 ELSE seen1 END
    WHERE game_id = $1 AND version = $10
    RETURNING game_id
), act AS (
    INSERT INTO game_actions
        (game_id, version, account_id, command, command_hash, event_type, view, occurred_at)
    SELECT game_id, $2, $11, $12::jsonb, $13, $14, $15, $8 FROM upd
), ob AS (
    INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)
    SELECT e.event_id, e.topic, upd.game_id, e.ce_type, e.payload, e.headers, $8
    FROM upd, unnest($16::text[], $17::text[], $18::text[], $19::bytea[], $20::jsonb[])
        WITH ORDINALITY AS e(event_id, topic, ce_type, payload, headers, ord)
    ORDER BY e.ord
), tset AS (
    INSERT INTO timers (game_id, kind, due_at)
    SELECT upd.game_id, t.kind, t.due_at
    FROM upd, unnest($21::text[], $22::timestamptz[]) AS t(kind, due_at)
    ON CONFLICT (game_id, kind) DO UPDATE SET due_at = EXCLUDED.due_at
), tclear AS (
    DELETE FROM timers
    WHERE game_id = $1 AND kind = ANY($23::text[]) AND EXISTS (SELECT 1 FROM upd)
), seeds AS (
    INSERT INTO dice_seeds
        (game_id, game_number, commitment, server_seed, client_seed, roll_count, finished_at)
    SELECT upd.game_id, s.game_number, s.commitment, s.server_seed, $26, s.roll_count, $8
    FROM upd, unnest($24::int[], $25::text[], $27::bytea[], $28::int[])
        AS s(game_number, commitment, server_seed, roll_count)
)
SELECT count(*) FROM upd
"""

_READ = (
    "SELECT game_id, version, status, state, seed, updated_at, seen0, seen1 "
    "FROM games WHERE game_id = $1"
)


@dataclass(frozen=True)
class Write:
    """Everything one applied command writes."""

    session: Session
    expected_version: int
    state: dict[str, Any]
    actor: int | None
    account_id: str
    command: dict[str, Any]
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


async def _no_reset(connection: Any) -> None:
    """This pool runs only single autocommit statements: no session state to reset.

    asyncpg's default reset costs one more round trip (``RESET ALL`` etc.) per call.
    """


class FastStore:
    """A small asyncpg pool for the command path (SQLAlchemy serves everything else)."""

    def __init__(self, database_url: str, *, min_size: int = 2, max_size: int = 10) -> None:
        self._dsn = database_url.replace("postgresql+asyncpg://", "postgresql://", 1)
        self._min, self._max = min_size, max_size
        self._pool: asyncpg.Pool | None = None

    async def _ready(self) -> asyncpg.Pool:
        if self._pool is None:
            self._pool = await asyncpg.create_pool(
                self._dsn, min_size=self._min, max_size=self._max, reset=_no_reset
            )
        return self._pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def read(self, game_id: str) -> asyncpg.Record | None:
        async with _reachable():
            pool = await self._ready()
            row: asyncpg.Record | None = await pool.fetchrow(_READ, game_id)
        return row

    async def write(self, w: Write) -> bool:
        """Apply ``w`` if the game is still at ``w.expected_version``; False otherwise."""
        s = w.session
        events = list(zip(*w.events, strict=True)) or [(), (), (), (), ()]
        timers = list(zip(*w.timers_set, strict=True)) or [(), ()]
        seeds = list(zip(*w.seeds, strict=True)) or [(), (), (), ()]
        async with _reachable():
            pool = await self._ready()
            count: int = await pool.fetchval(
                _WRITE,
                s.game_id,
                s.version,
                s.status.value,
                json.dumps(w.state),
                s.seed,
                not s.presence[0].connected,
                not s.presence[1].connected,
                s.updated_at,
                -1 if w.actor is None else w.actor,
                w.expected_version,
                w.account_id,
                json.dumps(w.command),
                w.command_hash,
                w.event_type,
                w.view,
                list(events[0]),
                list(events[1]),
                list(events[2]),
                list(events[3]),
                [json.dumps(h) for h in events[4]],
                list(timers[0]),
                list(timers[1]),
                list(w.timers_cleared),
                list(seeds[0]),
                list(seeds[1]),
                s.client_seed,
                list(seeds[2]),
                list(seeds[3]),
            )
        return count == 1
