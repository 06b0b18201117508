"""system account balances split over shards

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29

Every settlement credits the house commission account of its currency, so a
single row for it would make all settlements queue on one row lock. Its
balance (and every system account's) is therefore the row in
``ledger_accounts`` plus the sum of SHARDS rows here; a posting adds its delta
to one shard chosen from its first transfer id. Player accounts are not
sharded: their balance must be checked under a lock anyway.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SHARDS = 16


def upgrade() -> None:
    op.create_table(
        "system_balance_shards",
        sa.Column(
            "account_id", sa.String(200), sa.ForeignKey("ledger_accounts.id"), primary_key=True
        ),
        sa.Column("shard", sa.SmallInteger, primary_key=True),
        sa.Column("debits", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("credits", sa.BigInteger, nullable=False, server_default="0"),
        sa.CheckConstraint(f"shard >= 0 AND shard < {SHARDS}", name="shard_in_range"),
    )
    op.execute(
        "INSERT INTO system_balance_shards (account_id, shard) "
        f"SELECT id, shard FROM ledger_accounts, generate_series(0, {SHARDS - 1}) AS shard "
        "WHERE kind <> 'player'"
    )


def downgrade() -> None:
    op.drop_table("system_balance_shards")
