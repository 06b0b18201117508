"""The SQL of grouped settlement (:mod:`services.wallet.grouped_settlement`), sent to asyncpg.

One transaction settles a group of games in two statements. Its locks follow the
wallet's global order (see :mod:`services.wallet.store`): inbox rows (sorted by
event id), holds (sorted by id), player accounts (sorted by id), all taken by
LOCK_GROUP; then WRITE's one system balance shard per system account (sorted by
account id).
"""

from __future__ import annotations

from services.wallet.store.settlements import SETTLEMENT_COLUMNS

# The group's two statements keep their shape whatever the group's size (only
# the arrays' lengths change), so they are planned once per connection instead
# of for every group: the plan for a custom size was no better, and cost about
# a tenth of the database's time per settlement. Every row they touch is found
# by key, so sequential scans are off: a generic plan made while a table was
# small would otherwise scan it for the connection's life (migration 0005 does
# the same for LOCK_GROUP's function).
BEGIN = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL enable_seqscan = off"
# A group's COMMIT begins the writer's next transaction in the same round trip.
COMMIT_AND_BEGIN = f"COMMIT; {BEGIN}"

# Claims the inbox rows, locks holds and player accounts, opens the missing
# player accounts it is given, reads the system balances and the settlements
# already recorded: migration 0004, one round trip.
LOCK_GROUP = (
    "SELECT * FROM wallet_lock_settlement_group($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
)

# The PostgreSQL type of each settlement column that is not text.
_SETTLEMENT_TYPES = {
    "game_number": "int", "win_sum": "bigint", "commission_total": "bigint",
    "disconnection": "boolean", "settled_at": "timestamptz",
}  # fmt: skip


def _unnest(first: int, types: tuple[str, ...]) -> str:
    return ", ".join(f"${first + index}::{kind}[]" for index, kind in enumerate(types))


_SETTLEMENTS_FROM = 22  # first parameter of the settlement columns in WRITE
_OUTBOX_FROM = _SETTLEMENTS_FROM + len(SETTLEMENT_COLUMNS)
_SETTLEMENT_UNNEST_TYPES = tuple(_SETTLEMENT_TYPES.get(name, "text") for name in SETTLEMENT_COLUMNS)

# Every row the group writes, in one statement: transfers (their entries are a
# view of them, migration 0006), the player balances (locked by LOCK_GROUP), one
# shard row per system account (locked here in account id order: the only new
# row locks of the statement), the posted holds (locked by LOCK_GROUP), the
# settlement records and the Settled events in the outbox.
WRITE = f"""
WITH posted AS (
    INSERT INTO transfers (id, debit_account_id, credit_account_id, amount, currency,
                           code, reference, content_hash, posted_at)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                         $6::smallint[], $7::text[], $8::text[], $9::timestamptz[])
), players AS (
    UPDATE ledger_accounts AS a
    SET debits = a.debits + d.debits, credits = a.credits + d.credits, version = a.version + 1
    FROM unnest($10::text[], $11::bigint[], $12::bigint[]) AS d(id, debits, credits)
    WHERE a.id = d.id
), shards AS (
    SELECT s.account_id, d.debits, d.credits
    FROM system_balance_shards AS s
    JOIN unnest($13::text[], $14::bigint[], $15::bigint[]) AS d(id, debits, credits)
        ON s.account_id = d.id
    WHERE s.shard = $16::smallint
    ORDER BY s.account_id
    FOR UPDATE OF s
), systems AS (
    UPDATE system_balance_shards AS s
    SET debits = s.debits + d.debits, credits = s.credits + d.credits
    FROM shards AS d
    WHERE s.account_id = d.account_id AND s.shard = $16::smallint
), held AS (
    UPDATE holds AS h SET amount = d.amount, status = d.status, game_id = d.game_id,
                          updated_at = d.updated_at
    FROM unnest($17::text[], $18::bigint[], $19::text[], $20::text[], $21::timestamptz[])
        AS d(id, amount, status, game_id, updated_at)
    WHERE h.id = d.id
), settled AS (
    INSERT INTO settlements ({", ".join(SETTLEMENT_COLUMNS)})
    SELECT * FROM unnest({_unnest(_SETTLEMENTS_FROM, _SETTLEMENT_UNNEST_TYPES)})
)
INSERT INTO outbox (event_id, topic, key, ce_type, payload, headers, created_at)
SELECT e.event_id, e.topic, e.key, e.ce_type, e.payload, e.headers, e.created_at
FROM unnest({_unnest(_OUTBOX_FROM, ("text",) * 4 + ("bytea", "jsonb", "timestamptz"))})
    WITH ORDINALITY AS e(event_id, topic, key, ce_type, payload, headers, created_at, ord)
ORDER BY e.ord
"""
