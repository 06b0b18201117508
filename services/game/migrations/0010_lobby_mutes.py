"""lobby chat mutes: the players each player has muted in the lobby

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05

Beside ``lobby_messages``; see services/game/lobby_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lobby_mutes",
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("muted_account_id", sa.String(64), nullable=False),
        sa.Column("muted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("account_id", "muted_account_id"),
    )
    op.create_index("lobby_mutes_by_muted", "lobby_mutes", ["muted_account_id"])


def downgrade() -> None:
    op.drop_index("lobby_mutes_by_muted", table_name="lobby_mutes")
    op.drop_table("lobby_mutes")
