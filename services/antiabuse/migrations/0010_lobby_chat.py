"""chat lines from the lobby: the room a lobby message was said in

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05

A lobby line (LobbyMessagePosted) has its room and no game or recipient ("");
table lines keep room "". See services/antiabuse/chat_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "chat_lines", sa.Column("room", sa.String(32), nullable=False, server_default="")
    )


def downgrade() -> None:
    op.drop_column("chat_lines", "room")
