"""rating_changes: the history of every rating change, one row per player per rated result

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

Each row says what one finished match (or single money game) did to one player's
rating: before and after, the opponent's standing it was computed against, the
length and how it ended. The pair (game_id, game_number, account_id) is unique,
so a result reported again under another event id cannot count twice (the inbox
already skips a redelivered event id).
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
        "rating_changes",
        sa.Column("seq", sa.BigInteger, sa.Identity(always=True), primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False),
        # The session (match or money game) and, for a money game, its game number (0 = match).
        sa.Column("game_id", sa.String(100), nullable=False),
        sa.Column("game_number", sa.Integer, nullable=False),
        sa.Column("opponent_account_id", sa.String(36), nullable=False),
        sa.Column("match_length", sa.Integer, nullable=False),
        sa.Column("won", sa.Boolean, nullable=False),
        # Disconnection settlements only: this player's share, which weighted the change.
        sa.Column("share", sa.Float),
        sa.Column("reason", sa.String(20), nullable=False),
        sa.Column("rating_before", sa.Float, nullable=False),
        sa.Column("rating_after", sa.Float, nullable=False),
        sa.Column("experience_before", sa.Integer, nullable=False),
        sa.Column("experience_after", sa.Integer, nullable=False),
        sa.Column("opponent_rating_before", sa.Float, nullable=False),
        sa.Column("opponent_experience_before", sa.Integer, nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("source_event_id", sa.String(64), nullable=False),
        sa.UniqueConstraint(
            "game_id", "game_number", "account_id", name="rating_changes_once_per_result"
        ),
        sa.CheckConstraint("match_length >= 1", name="rating_changes_length_positive"),
        sa.CheckConstraint(
            "experience_after = experience_before + match_length",
            name="rating_changes_experience_grows_by_length",
        ),
    )
    # A player's history, newest first.
    op.create_index(
        "rating_changes_by_account", "rating_changes", ["account_id", sa.text("seq DESC")]
    )


def downgrade() -> None:
    op.drop_index("rating_changes_by_account", table_name="rating_changes")
    op.drop_table("rating_changes")
