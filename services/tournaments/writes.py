"""A tournament's lock and its save, each one statement on the session's asyncpg connection.

Every result, game created and registration locks the tournament's row and saves what
changed: the changed matches, the row with its version one up, and (a result) its
``MatchDecided`` in the outbox. Through SQLAlchemy that was a statement each, each paying
the ORM session's execution (the construct built, its cache key, the compiled-statement
cache, the greenlet hops, the result rows) besides its round trip: profiled, most of the
results consumer's CPU a result. Here the save is one statement (the matches and the
events are data-modifying ``WITH`` parts of the row's ``UPDATE``, their columns as
arrays, so its text is the same whatever the number of rows and asyncpg prepares it once
per connection), and both run on the connection's asyncpg connection, in the
transaction SQLAlchemy began on it: the outbox relay runs its rounds the same way
(``services/kit/events/relay.py``).

They run only inside a transaction already begun: SQLAlchemy's asyncpg adapter sends
``BEGIN`` with a transaction's first statement, so a lock sent here first would run
outside any transaction and hold nothing. :func:`in_transaction` says when they may, and
:func:`begun` begins one through the adapter when none is (a lock as a transaction's
first statement: the driver's and registration's records), so the session's commit and
rollback end it as they end any of its transactions.

A read on its own (an autocommit connection: no transaction) is one prepared statement on
the connection too: the lobby's version read (:func:`version`; the lobby polls a tournament
every second or so, and the ORM's execution was most of what a poll of an unchanged
tournament cost) and the driver's look for work at every pass (:data:`DUE`,
:data:`NEXT_DUE`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.events.envelope import Envelope
from services.tournaments.domain import bracket as brackets

VERSION = "SELECT version FROM tournaments WHERE tournament_id = $1"
LOCK = VERSION + " FOR UPDATE"

# $1 the tournament; $2-$8 the changed matches' columns; $9-$15 the events'; then the
# row's columns. NULL needs_work, prizes or seating leave the stored value (a save never
# clears them: the flag is cleared by an explicit false, prizes and seating are set once).
SAVE = """
WITH saved_matches AS (
    INSERT INTO tournament_matches
        (tournament_id, round, position, top, bottom, game_id, winner, decision)
    SELECT $1, round, position, top, bottom, game_id, winner, decision
    FROM unnest($2::smallint[], $3::smallint[], $4::varchar[], $5::varchar[],
                $6::varchar[], $7::varchar[], $8::varchar[])
        AS changed(round, position, top, bottom, game_id, winner, decision)
    ON CONFLICT (tournament_id, round, position) DO UPDATE SET
        top = excluded.top, bottom = excluded.bottom, game_id = excluded.game_id,
        winner = excluded.winner, decision = excluded.decision
), published AS (
    INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)
    SELECT id, topic, key, type, payload, CAST(headers AS jsonb), created
    FROM unnest($9::varchar[], $10::varchar[], $11::varchar[], $12::varchar[],
                $13::bytea[], $14::text[], $15::timestamptz[])
        AS events(id, topic, key, type, payload, headers, created)
)
UPDATE tournaments SET
    version = version + 1,
    status = $16, cancel_reason = $17, started_at = $18, finished_at = $19,
    registration_closes_at = $20, starts_at = $21,
    needs_work = COALESCE($22::boolean, needs_work),
    prizes = COALESCE(CAST($23::text AS jsonb), prizes),
    seating = COALESCE(CAST($24::text AS jsonb), seating)
WHERE tournament_id = $1
RETURNING version
"""


async def in_transaction(session: AsyncSession) -> asyncpg.Connection | None:
    """The session's asyncpg connection when a transaction is under way on it (its first
    statement was sent); None otherwise (then the caller goes through SQLAlchemy)."""
    if not session.in_transaction():
        return None
    connection = await session.connection()
    driver: asyncpg.Connection = (await connection.get_raw_connection()).driver_connection
    return driver if driver.is_in_transaction() else None


# The driver's look for due tournaments ($1 now, $2 how many, $3 and $4 the registering
# and seated statuses) and for the next time one comes due by the clock: at every pass.
DUE = """
SELECT tournament_id FROM tournaments
WHERE needs_work
   OR (status = $3 AND registration_closes_at <= $1)
   OR (status = $4 AND (starts_at IS NULL OR starts_at <= $1))
ORDER BY created_at LIMIT $2
"""
NEXT_DUE = """
SELECT (SELECT min(registration_closes_at) FROM tournaments
        WHERE status = $2 AND registration_closes_at > $1),
       (SELECT min(starts_at) FROM tournaments WHERE status = $3 AND starts_at > $1)
"""


async def begun(session: AsyncSession) -> asyncpg.Connection | None:
    """The session's asyncpg connection with a transaction under way, beginning one (its
    ``BEGIN`` sent now) through SQLAlchemy's asyncpg adapter, which then commits or rolls
    it back with the session. None when the adapter is not the one this knows (the caller
    goes through SQLAlchemy) or the connection is autocommit (nothing to begin)."""
    connection = await session.connection()
    raw = await connection.get_raw_connection()
    adapted: Any = raw.dbapi_connection
    driver: asyncpg.Connection = raw.driver_connection
    start = getattr(adapted, "_start_transaction", None)
    if not driver.is_in_transaction():
        if start is None or getattr(adapted, "_transaction", False) is not None:
            return None
        await start()  # nothing when autocommit: then still no transaction
    return driver if driver.is_in_transaction() else None


async def connection_of(session: AsyncSession) -> asyncpg.Connection:
    """The session's asyncpg connection (checked out of the pool for the session)."""
    connection = await session.connection()
    driver: asyncpg.Connection = (await connection.get_raw_connection()).driver_connection
    return driver


async def version(driver: asyncpg.Connection, tournament_id: str) -> int | None:
    """The tournament's version as stored, without a lock (None: no row)."""
    found = await driver.fetchval(VERSION, tournament_id)
    return None if found is None else int(found)


async def lock(driver: asyncpg.Connection, tournament_id: str) -> int | None:
    """Lock the tournament's row until the transaction ends; its version (None: no row)."""
    found = await driver.fetchval(LOCK, tournament_id)
    return None if found is None else int(found)


async def save(
    driver: asyncpg.Connection,
    tournament_id: str,
    row: dict[str, Any],
    matches: Sequence[brackets.Match],
    events: Sequence[Envelope],
) -> int:
    """Write ``matches``, ``events`` and the row's columns (``row``: the repository's,
    with ``needs_work``, ``prizes`` and ``seating`` when they change); the new version."""
    prizes, seating = row.get("prizes"), row.get("seating")
    version = await driver.fetchval(
        SAVE,
        tournament_id,
        [m.round for m in matches],
        [m.index for m in matches],
        [m.players[0] for m in matches],
        [m.players[1] for m in matches],
        [m.game_id for m in matches],
        [m.winner for m in matches],
        [None if m.decision is None else m.decision.value for m in matches],
        *Envelope.outbox_columns(events),
        row["status"],
        row["cancel_reason"],
        row["started_at"],
        row["finished_at"],
        row["registration_closes_at"],
        row["starts_at"],
        row.get("needs_work"),
        None if prizes is None else json.dumps(prizes),
        None if seating is None else json.dumps(seating),
    )
    if version is None:
        raise LookupError(f"no tournament {tournament_id} to save")
    return int(version)
