"""outbox and inbox

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from services.kit.events.tables import create_event_tables_migration, drop_event_tables_migration

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_event_tables_migration()


def downgrade() -> None:
    drop_event_tables_migration()
