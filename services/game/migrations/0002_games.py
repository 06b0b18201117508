"""games, action log, dice seeds and timers

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def _when(name: str, nullable: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "games",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("account0", sa.String(64), nullable=False),
        sa.Column("account1", sa.String(64), nullable=False),
        sa.Column("state", JSONB, nullable=False),
        sa.Column("seed", sa.LargeBinary, nullable=False),
        _when("seen0"),
        _when("seen1"),
        sa.Column("away0", sa.Boolean, nullable=False),
        sa.Column("away1", sa.Boolean, nullable=False),
        sa.Column("idempotency_key", sa.String(200), unique=True),
        _when("created_at"),
        _when("updated_at"),
    )
    op.create_index("ix_games_account0", "games", ["account0"])
    op.create_index("ix_games_account1", "games", ["account1"])
    op.create_index(
        "games_in_progress",
        "games",
        ["updated_at"],
        postgresql_where=sa.text("status = 'in_progress'"),
    )
    op.create_table(
        "game_actions",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("command", JSONB, nullable=False),
        sa.Column("command_hash", sa.String(64), nullable=False),
        sa.Column("event_type", sa.String(100), nullable=False),
        sa.Column("view", sa.LargeBinary, nullable=False),
        _when("occurred_at"),
        sa.PrimaryKeyConstraint("game_id", "version"),
    )
    op.create_table(
        "dice_seeds",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("game_number", sa.Integer, nullable=False),
        sa.Column("commitment", sa.String(64), nullable=False),
        sa.Column("server_seed", sa.LargeBinary, nullable=False),
        sa.Column("client_seed", sa.String(200), nullable=False),
        sa.Column("roll_count", sa.Integer, nullable=False),
        _when("finished_at"),
        sa.PrimaryKeyConstraint("game_id", "game_number"),
    )
    op.create_table(
        "timers",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        _when("due_at"),
        sa.PrimaryKeyConstraint("game_id", "kind"),
    )
    op.create_index("ix_timers_due_at", "timers", ["due_at"])


def downgrade() -> None:
    for table in ("timers", "dice_seeds", "game_actions", "games"):
        op.drop_table(table)
