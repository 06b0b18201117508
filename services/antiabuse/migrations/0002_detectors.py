"""detector facts, alerts and pair restrictions

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The tables as services/antiabuse/tables.py declares them at this revision.
    from services.antiabuse.tables import metadata

    metadata.create_all(op.get_bind())


def downgrade() -> None:
    from services.antiabuse.tables import metadata

    metadata.drop_all(op.get_bind())
