"""self_exclusions: the accounts service's self-exclusions, kept to refuse play at once

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

One row per self-excluded player with the end of their exclusion, written by the
self-exclusions consumer from AccountSelfExcluded (``services/kit/self_exclusion.py``)
and read before a table is opened or joined or the queue entered.
"""

from __future__ import annotations

from services.kit.self_exclusion import (
    create_self_exclusions_migration,
    drop_self_exclusions_migration,
)

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_self_exclusions_migration()


def downgrade() -> None:
    drop_self_exclusions_migration()
