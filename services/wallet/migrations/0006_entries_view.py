"""entries become a view of the transfers

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29

A transfer already names the account it debits and the account it credits, for
one amount, as TigerBeetle's transfers do. The entries table repeated that in
two rows per transfer, each with its own indexes and foreign-key checks: about
two fifths of what a settlement wrote. The entries are now derived, a view with
the same columns (a transfer's debit leg as a negative amount, its credit leg as
a positive one). Every reader and every audit check stays as it was, and an
entry can no longer disagree with its transfer.

Before it drops the table, the upgrade checks that the table says exactly what
the transfers say, and stops, naming how many rows differ, if it does not.
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_LEGS = """
    SELECT id AS transfer_id, debit_account_id AS account_id, -amount AS amount, currency
    FROM transfers
    UNION ALL
    SELECT id, credit_account_id, amount, currency FROM transfers
"""


def upgrade() -> None:
    op.execute(
        f"""
        DO $$
        DECLARE
            differing bigint;
        BEGIN
            SELECT count(*) INTO differing FROM (
                (SELECT transfer_id, account_id, amount, currency FROM entries
                 EXCEPT ALL ({_LEGS}))
                UNION ALL
                (({_LEGS}) EXCEPT ALL
                 SELECT transfer_id, account_id, amount, currency FROM entries)
            ) AS differences;
            IF differing > 0 THEN
                RAISE EXCEPTION 'entries differ from their transfers in % rows', differing
                    USING HINT = 'run tavla wallet audit and repair the ledger first';
            END IF;
        END $$
        """
    )
    op.execute("DROP TABLE entries")
    op.execute(f"CREATE VIEW entries AS {_LEGS}")


def downgrade() -> None:
    op.execute("DROP VIEW entries")
    op.execute(
        """
        CREATE TABLE entries (
            transfer_id varchar(300) NOT NULL REFERENCES transfers (id),
            account_id varchar(200) NOT NULL REFERENCES ledger_accounts (id),
            amount bigint NOT NULL,
            currency varchar(8) NOT NULL,
            PRIMARY KEY (transfer_id, account_id)
        )
        """
    )
    op.execute("CREATE INDEX entries_account ON entries (account_id)")
    op.execute(
        "CREATE TRIGGER entries_immutable BEFORE UPDATE OR DELETE ON entries "
        "FOR EACH ROW EXECUTE FUNCTION wallet_refuse_change()"
    )
    op.execute(f"INSERT INTO entries {_LEGS}")
