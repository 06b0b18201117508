"""table chat: messages (delivered and blocked) and per-game mutes

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Apart from ``games``: posting a message never touches (or locks) the game row, so
chat cannot slow a move. See services/game/chat_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_messages",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("message_id", sa.String(64), nullable=False, unique=True),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("display_name", sa.String(100), nullable=False),
        sa.Column("text", sa.String(1200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reasons", sa.String(200), nullable=False),
        sa.Column("muted_for", sa.String(64), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", "seq"),
    )
    op.create_index("chat_messages_by_sender", "chat_messages", ["account_id", "posted_at"])
    op.create_table(
        "chat_mutes",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("muted", sa.Boolean, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", "account_id"),
    )


def downgrade() -> None:
    op.drop_table("chat_mutes")
    op.drop_index("chat_messages_by_sender", table_name="chat_messages")
    op.drop_table("chat_messages")
