"""games, action log, dice seeds and timers

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The tables are defined once, in the store; this revision creates them as of today.
    from services.game.store import metadata

    metadata.create_all(op.get_bind())


def downgrade() -> None:
    from services.game.store import metadata

    metadata.drop_all(op.get_bind())
