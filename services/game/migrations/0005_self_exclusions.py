"""self_exclusions: the accounts service's self-exclusions, kept to refuse play at once

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-05

One row per self-excluded player with the end of their exclusion, written by the
self-exclusions consumer from AccountSelfExcluded (``services/kit/self_exclusion.py``)
and read before a game is created: no game starts with a self-excluded player.
"""

from __future__ import annotations

from services.kit.self_exclusion import (
    create_self_exclusions_migration,
    drop_self_exclusions_migration,
)

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_self_exclusions_migration()


def downgrade() -> None:
    drop_self_exclusions_migration()
