"""screen names: the game's copy of the accounts service's, for its seats

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

See services/kit/screen_names.py.
"""

from __future__ import annotations

from services.kit.screen_names import (
    create_screen_names_migration,
    drop_screen_names_migration,
)

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_screen_names_migration()


def downgrade() -> None:
    drop_screen_names_migration()
