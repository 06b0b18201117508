"""settlement group lookups always go by index

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29

Grouped settlement runs its statements with generic plans (planned once per
connection: see services/wallet/grouped_sql.py). A generic plan made while a
table was still small (a fresh deployment, a table not yet analysed) scans it
sequentially, and keeps doing so for the connection's life as the table grows:
the lookup of already recorded settlements came to cost 2.4 ms a group after
fifteen thousand settlements. Every lookup in the group's function is by key,
so sequential scans are switched off for it.
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER FUNCTION wallet_lock_settlement_group SET enable_seqscan = off")


def downgrade() -> None:
    op.execute("ALTER FUNCTION wallet_lock_settlement_group RESET enable_seqscan")
