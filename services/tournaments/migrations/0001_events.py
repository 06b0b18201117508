"""outbox, inbox, parked events and the self-exclusions copy

Revision ID: 0001
Revises:
Create Date: 2026-12-05
"""

from __future__ import annotations

from services.kit.events.tables import (
    create_event_tables_migration,
    create_parked_events_migration,
    drop_event_tables_migration,
    drop_parked_events_migration,
)
from services.kit.self_exclusion import (
    create_self_exclusions_migration,
    drop_self_exclusions_migration,
)

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_event_tables_migration()
    create_parked_events_migration()
    create_self_exclusions_migration()


def downgrade() -> None:
    drop_self_exclusions_migration()
    drop_parked_events_migration()
    drop_event_tables_migration()
