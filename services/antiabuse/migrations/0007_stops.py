"""stopped sessions: where sessions ended by a timeout or a resignation stopped, valued

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

One row per StopValued (tavla.game.v1); see services/antiabuse/stops_store.py.
Written out here rather than read from that module.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "stopped_sessions",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("account_id", sa.String(ID), nullable=False),
        sa.Column("opponent_account_id", sa.String(ID), nullable=False),
        sa.Column("reason", sa.SmallInteger, nullable=False),
        sa.Column("share", sa.Float),
        sa.Column("stopped_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("stopped_sessions_by_account", "stopped_sessions", ["account_id", "stopped_at"])


def downgrade() -> None:
    op.drop_index("stopped_sessions_by_account", table_name="stopped_sessions")
    op.drop_table("stopped_sessions")
