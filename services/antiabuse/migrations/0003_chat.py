"""chat lines for the chat-abuse and consulting detectors

Revision ID: 0003_chat
Revises: 0002
Create Date: 2026-12-01

One row per ChatMessagePosted from the game service; see services/antiabuse/chat_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_chat"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_lines",
        sa.Column("message_id", sa.String(64), primary_key=True),
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("recipient", sa.String(64), nullable=False),
        sa.Column("text", sa.String(1200), nullable=False),
        sa.Column("blocked_reasons", sa.String(200), nullable=False),
        sa.Column("muted_by_recipient", sa.Boolean, nullable=False),
        sa.Column("english", sa.Boolean),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("chat_lines_by_sender", "chat_lines", ["account_id", "at"])


def downgrade() -> None:
    op.drop_index("chat_lines_by_sender", table_name="chat_lines")
    op.drop_table("chat_lines")
