"""wallet_lock_settlement_group: a settlement group's reads and locks in one round trip

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29

Grouped settlement (services/wallet/grouped_settlement.py) reads and locks
before the domain decides, then writes. This function does the reading part in
the wallet's global lock order, each step a statement of its own (so each sees
what the transactions it waited for committed): claim the inbox rows (sorted
by event id), lock the holds (sorted), lock the player accounts (sorted), open
the missing ones it is asked to open and lock them, read the system accounts
(row plus shards, unlocked), then read the settlements already recorded.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION wallet_lock_settlement_group(
            event_ids text[], consumer_name text, ce_types text[], processed_at timestamptz[],
            hold_ids text[], player_ids text[], system_ids text[],
            open_ids text[], open_currencies text[], open_owners text[],
            settlement_ids text[],
            OUT claimed text[], OUT held holds[],
            OUT account_ids text[], OUT kinds text[], OUT currencies text[], OUT owners text[],
            OUT debits bigint[], OUT credits bigint[],
            OUT known settlements[])
        LANGUAGE plpgsql VOLATILE AS $$
        #variable_conflict use_column
        DECLARE
            missing text[];
        BEGIN
            WITH claim AS (
                INSERT INTO inbox (event_id, consumer, ce_type, processed_at)
                SELECT e.event_id, consumer_name, e.ce_type, e.at
                FROM unnest(event_ids, ce_types, processed_at)
                    WITH ORDINALITY AS e(event_id, ce_type, at, ord)
                ORDER BY e.event_id
                ON CONFLICT DO NOTHING
                RETURNING event_id
            )
            SELECT coalesce(array_agg(event_id), '{}') INTO claimed FROM claim;

            SELECT coalesce(array_agg(h), '{}') INTO held FROM (
                SELECT * FROM holds WHERE id = ANY(hold_ids) ORDER BY id FOR UPDATE
            ) AS h;

            PERFORM 1 FROM (
                SELECT id FROM ledger_accounts WHERE id = ANY(player_ids) ORDER BY id FOR UPDATE
            ) AS locked;

            SELECT array_agg(o.id ORDER BY o.id) INTO missing
            FROM unnest(open_ids) AS o(id)
            WHERE NOT EXISTS (SELECT 1 FROM ledger_accounts AS a WHERE a.id = o.id);
            IF missing IS NOT NULL THEN
                INSERT INTO ledger_accounts (id, kind, currency, owner)
                SELECT o.id, 'player', o.currency, o.owner
                FROM unnest(open_ids, open_currencies, open_owners) AS o(id, currency, owner)
                WHERE o.id = ANY(missing)
                ORDER BY o.id
                ON CONFLICT DO NOTHING;
                PERFORM 1 FROM (
                    SELECT id FROM ledger_accounts WHERE id = ANY(missing) ORDER BY id FOR UPDATE
                ) AS opened;
            END IF;

            SELECT coalesce(array_agg(a.id), '{}'), coalesce(array_agg(a.kind), '{}'),
                   coalesce(array_agg(a.currency), '{}'), coalesce(array_agg(a.owner), '{}'),
                   coalesce(array_agg(a.debits), '{}'), coalesce(array_agg(a.credits), '{}')
            INTO account_ids, kinds, currencies, owners, debits, credits
            FROM (
                SELECT id, kind, currency, owner, debits, credits FROM ledger_accounts
                WHERE id = ANY(player_ids)
                UNION ALL
                SELECT a.id, a.kind, a.currency, a.owner,
                       (a.debits + COALESCE(sum(s.debits), 0))::bigint,
                       (a.credits + COALESCE(sum(s.credits), 0))::bigint
                FROM ledger_accounts AS a
                LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
                WHERE a.id = ANY(system_ids)
                GROUP BY a.id
            ) AS a;

            SELECT coalesce(array_agg(s), '{}') INTO known
            FROM settlements AS s WHERE s.id = ANY(settlement_ids);
        END $$
        """
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION wallet_lock_settlement_group")
