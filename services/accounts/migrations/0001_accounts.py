"""accounts table, outbox and inbox

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from services.kit.events.tables import create_event_tables_migration, drop_event_tables_migration

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_event_tables_migration()
    op.create_table(
        "accounts",
        sa.Column("account_id", sa.String(36), primary_key=True),
        sa.Column("email", sa.String(254), nullable=False, unique=True),
        sa.Column("display_name", sa.String(24), nullable=False, unique=True),
        sa.Column("country_code", sa.String(2), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("password_hash", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("self_excluded_until", sa.DateTime(timezone=True)),
    )


def downgrade() -> None:
    op.drop_table("accounts")
    drop_event_tables_migration()
