"""suspended and terminated accounts: the game's copy of the accounts service's, for the
lobby chat

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05

See services/kit/suspensions.py.
"""

from __future__ import annotations

from services.kit.suspensions import create_suspensions_migration, drop_suspensions_migration

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_suspensions_migration()


def downgrade() -> None:
    drop_suspensions_migration()
