"""parked events: what the consumers could not apply, for an operator to replay

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05
"""

from __future__ import annotations

from services.kit.events.tables import (
    create_parked_events_migration,
    drop_parked_events_migration,
)

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_parked_events_migration()


def downgrade() -> None:
    drop_parked_events_migration()
