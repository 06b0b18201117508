"""declared residence and date of birth; where each login and refresh came from

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Accounts opened before this have no residence or date of birth (NULL): their
tokens carry no residence, so real-money geo checks refuse them
(``residence_missing``) until support records one. Nothing is guessed from the
old two-letter country: "US" says nothing about the state.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("accounts", sa.Column("residence", sa.String(8)))
    op.add_column("accounts", sa.Column("date_of_birth", sa.Date))
    for table in ("sessions", "refresh_tokens"):
        op.add_column(
            table, sa.Column("client_address", sa.String(45), nullable=False, server_default="")
        )
        op.add_column(
            table, sa.Column("device_id", sa.String(128), nullable=False, server_default="")
        )


def downgrade() -> None:
    for table in ("refresh_tokens", "sessions"):
        op.drop_column(table, "device_id")
        op.drop_column(table, "client_address")
    op.drop_column("accounts", "date_of_birth")
    op.drop_column("accounts", "residence")
