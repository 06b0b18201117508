"""satellite tickets

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-05

A ticket per satellite winner: the target, its value, the two holds the wallet placed
in the winner's name at the target, when it entered them (``used_at``, set once) or
when its holds went back because the target closed without them (``released_at``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tickets",
        sa.Column("satellite_id", sa.String(36), primary_key=True),
        sa.Column("account_id", sa.String(36), primary_key=True),
        sa.Column("target_id", sa.String(36), nullable=False),
        sa.Column("value", sa.BigInteger, nullable=False),
        sa.Column("buy_in_hold_id", sa.String(64), nullable=False),
        sa.Column("fee_hold_id", sa.String(64), nullable=False),
        sa.Column("issued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("used_at", sa.DateTime(timezone=True)),
        sa.Column("released_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("value > 0", name="tickets_value_positive"),
        sa.CheckConstraint(
            "used_at IS NULL OR released_at IS NULL", name="tickets_used_or_released"
        ),
    )
    op.create_index("tickets_by_target", "tickets", ["target_id", "account_id"])


def downgrade() -> None:
    op.drop_table("tickets")
