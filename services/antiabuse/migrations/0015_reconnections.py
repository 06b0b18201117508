"""reconnections: the drops that came back within the reconnect window

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-06

One row per PlayerReconnected (tavla.game.v1), once per game, account and time; read by
deliberate disconnects (drops that did not come back against those that did). See
services/antiabuse/reconnections_store.py. Written out here rather than read from that module.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "reconnections",
        sa.Column("event_id", sa.String(ID), primary_key=True),
        sa.Column("game_id", sa.String(ID), nullable=False),
        sa.Column("account_id", sa.String(ID), nullable=False),
        sa.Column("away_seconds", sa.Float, nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("reconnections_by_account", "reconnections", ["account_id", "occurred_at"])
    op.create_index(
        "reconnections_once", "reconnections", ["game_id", "account_id", "occurred_at"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("reconnections_once", table_name="reconnections")
    op.drop_index("reconnections_by_account", table_name="reconnections")
    op.drop_table("reconnections")
