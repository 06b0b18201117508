"""``CreateGame``'s two statements: what it must know before the stakes are claimed, and
the new game with everything it records.

Both run on the command path's pool (:class:`~services.game.fastpath.FastStore`), each a
single autocommit statement, so a new game costs two round trips to PostgreSQL:

1. :data:`BEFORE_CREATE` reads, in one snapshot, the game a retry of this idempotency key
   already created, the seats' self-exclusions that have not ended, and the screen names
   of seats that came without one.
2. :data:`CREATE` inserts the games row and, only if it was inserted, its first
   action-log row, its timers and its outbox events: all of them or none, in the
   statement's implicit transaction. A row that already holds the key (or the game id the
   key derives) makes the insert do nothing (``ON CONFLICT DO NOTHING`` waits for a
   concurrent insert of the same key to end first), and nothing else is written: the
   caller then answers with the game that key created.

The wallet's ``ClaimHolds`` runs between them, as it ran between the read and the
transaction that inserted the game before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

BEFORE_CREATE = """
SELECT 'game' AS kind, game_id AS account_id, NULL::timestamptz AS until, NULL::text AS name
FROM games WHERE idempotency_key = $1
UNION ALL
SELECT 'excluded', account_id, excluded_until, NULL
FROM self_exclusions WHERE account_id = ANY($2::text[]) AND excluded_until > $3
UNION ALL
SELECT 'name', account_id, NULL, screen_name
FROM screen_names WHERE account_id = ANY($4::text[])
"""

CREATE = """
WITH g AS (
    INSERT INTO games (game_id, table_id, version, status, account0, account1, state, seed,
        seen0, seen1, away0, away1, idempotency_key, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $9, $10, $11, $12, $9, $9)
    ON CONFLICT DO NOTHING
    RETURNING game_id
), act AS (
    INSERT INTO game_actions
        (game_id, version, account_id, command, command_hash, event_type, view, occurred_at)
    SELECT g.game_id, $3, '', $13::jsonb, $14, $15, $16, $9 FROM g
), ob AS (
    INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)
    SELECT e.event_id, e.topic, g.game_id, e.ce_type, e.payload, e.headers, $9
    FROM g, unnest($17::text[], $18::text[], $19::text[], $20::bytea[], $21::jsonb[])
        WITH ORDINALITY AS e(event_id, topic, ce_type, payload, headers, ord)
    ORDER BY e.ord
), t AS (
    INSERT INTO timers (game_id, kind, due_at)
    SELECT g.game_id, t.kind, t.due_at
    FROM g, unnest($22::text[], $23::timestamptz[]) AS t(kind, due_at)
)
SELECT game_id FROM g
"""


@dataclass(frozen=True)
class BeforeCreate:
    """What :data:`BEFORE_CREATE` found."""

    existing: str | None  # the game this idempotency key created, if any
    excluded: dict[str, datetime]  # seat account -> end of its self-exclusion
    names: dict[str, str]  # seat account -> screen name (only those asked for)


def before_create_arguments(
    idempotency_key: str, accounts: Sequence[str], at: datetime, unnamed: Sequence[str]
) -> list[Any]:
    return [idempotency_key, list(accounts), at, list(unnamed)]


def before_create(rows: Sequence[Any]) -> BeforeCreate:
    existing = None
    excluded: dict[str, datetime] = {}
    names: dict[str, str] = {}
    for kind, account_id, until, name in rows:
        if kind == "game":
            existing = account_id
        elif kind == "excluded":
            excluded[account_id] = until
        else:
            names[account_id] = name
    return BeforeCreate(existing, excluded, names)


@dataclass(frozen=True)
class NewGame:
    """Everything :data:`CREATE` writes."""

    game_id: str
    table_id: str
    version: int
    status: str
    accounts: tuple[str, str]
    state: dict[str, Any]
    seed: bytes
    at: datetime
    away: tuple[bool, bool]
    idempotency_key: str | None
    command: dict[str, Any]
    command_hash: str
    event_type: str
    view: bytes
    # Each event: id, topic, type, payload, headers.
    events: Sequence[tuple[str, str, str, bytes, dict[str, str]]]
    timers: Sequence[tuple[str, datetime]]  # kind, due


def create_arguments(new: NewGame) -> list[Any]:
    return [
        new.game_id, new.table_id, new.version, new.status, new.accounts[0], new.accounts[1],
        json.dumps(new.state), new.seed, new.at, new.away[0], new.away[1], new.idempotency_key,
        json.dumps(new.command), new.command_hash, new.event_type, new.view,
        [e[0] for e in new.events], [e[1] for e in new.events], [e[2] for e in new.events],
        [e[3] for e in new.events], [json.dumps(e[4]) for e in new.events],
        [kind for kind, _ in new.timers], [due for _, due in new.timers],
    ]  # fmt: skip
