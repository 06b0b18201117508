"""match analyses and decision times

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
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
        "match_analyses",
        sa.Column("game_id", sa.String(64), primary_key=True),
        sa.Column("analysis_id", sa.String(64), nullable=False, unique=True),
        sa.Column("account0", sa.String(64), nullable=False, index=True),
        sa.Column("account1", sa.String(64), nullable=False, index=True),
        sa.Column("plies", sa.Integer, nullable=False),
        sa.Column("analysis", sa.LargeBinary, nullable=False),
        sa.Column("analysed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "decision_times",
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("game_number", sa.Integer, nullable=False),
        sa.Column("account_id", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("seconds", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("game_id", "version"),
    )


def downgrade() -> None:
    op.drop_table("decision_times")
    op.drop_table("match_analyses")
