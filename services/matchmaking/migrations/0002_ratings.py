"""ratings: each player's current FIBS rating and experience

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

One row per player who has finished a rated match; a player without a row has
the starting rating (1500) and no experience. The history of changes and the
inbox that makes each match count once belong to the ratings consumer's own
migration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ratings",
        sa.Column("account_id", sa.String(36), primary_key=True),
        sa.Column("rating", sa.Float, nullable=False),
        # The sum of the lengths of the player's rated matches (a money game counts 1).
        sa.Column("experience", sa.Integer, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("experience >= 0", name="ratings_experience_not_negative"),
    )
    # The leaderboard reads players in rating order.
    op.create_index("ratings_by_rating", "ratings", [sa.text("rating DESC"), "account_id"])


def downgrade() -> None:
    op.drop_index("ratings_by_rating", table_name="ratings")
    op.drop_table("ratings")
