"""payments keep the provider's instrument fingerprint

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05

The provider's fingerprint of the card or account a confirmed payment used: an
opaque token, the same for every payment with that instrument, never its number.
Published with Deposited and WithdrawalCompleted for anti-abuse. Nullable: older
payments, and providers that give none, have none.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("payments", sa.Column("instrument_fingerprint", sa.String(128)))


def downgrade() -> None:
    op.drop_column("payments", "instrument_fingerprint")
