"""tournaments and their registrations

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-05

A tournament row is the aggregate (rules as the Rules message's JSON, the secret
seed, status, bracket, version); a registration row per entrant, kept with
``left_at`` when they leave until their holds are released (``released_at``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

STATUSES = "'registering', 'seated', 'running', 'finished', 'cancelling', 'cancelled'"


def upgrade() -> None:
    op.create_table(
        "tournaments",
        sa.Column("tournament_id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False, unique=True),
        sa.Column("rules", JSONB, nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("seed", sa.LargeBinary, nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("bracket", JSONB),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("needs_work", sa.Boolean, nullable=False),
        sa.Column("registration_closes_at", sa.DateTime(timezone=True)),
        sa.Column("starts_at", sa.DateTime(timezone=True)),
        sa.Column("cancel_reason", sa.String(300), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("prizes", JSONB),
        sa.CheckConstraint(f"status IN ({STATUSES})", name="tournaments_status"),
        sa.CheckConstraint("octet_length(seed) = 32", name="tournaments_seed_32_bytes"),
    )
    op.create_index(
        "tournaments_work", "tournaments", ["created_at"],
        postgresql_where=sa.text("needs_work OR status IN ('registering', 'seated')"),
    )
    op.create_table(
        "registrations",
        sa.Column("tournament_id", sa.String(36), sa.ForeignKey("tournaments.tournament_id"),
                  primary_key=True),
        sa.Column("account_id", sa.String(36), primary_key=True),
        sa.Column("buy_in_hold_id", sa.String(64), nullable=False),
        sa.Column("fee_hold_id", sa.String(64), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("entry", sa.Integer, nullable=False),
        sa.Column("left_at", sa.DateTime(timezone=True)),
        sa.Column("released_at", sa.DateTime(timezone=True)),
    )


def downgrade() -> None:
    op.drop_table("registrations")
    op.drop_table("tournaments")
