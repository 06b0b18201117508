"""lobby chat: every lobby message (delivered and blocked), per room

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-05

Beside table chat's ``chat_messages``; see services/game/lobby_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lobby_messages",
        sa.Column("room", sa.String(32), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False, unique=True),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("text", sa.String(1200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reasons", sa.String(200), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("room", "seq"),
    )
    op.create_index("lobby_messages_by_sender", "lobby_messages", ["account_id", "posted_at"])


def downgrade() -> None:
    op.drop_index("lobby_messages_by_sender", table_name="lobby_messages")
    op.drop_table("lobby_messages")
