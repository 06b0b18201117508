"""staff roles with their audit log; sanctions applied; the terminated persons' identifiers

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``account_roles``: the staff roles an account holds (signed into its access
tokens as the ``roles`` claim). ``role_changes``: every grant and revocation,
who ran it and when (append-only). ``applied_sanctions``: each anti-abuse
sanction applied once by its id (the inbox dedupes event ids; this the same
sanction under another event id). ``blocked_identifiers``: a terminated
person's normalised email, device ids and addresses, refused at registration.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "account_roles",
        sa.Column("account_id", sa.String(36), sa.ForeignKey("accounts.account_id"),
                  primary_key=True),
        sa.Column("role", sa.String(32), primary_key=True),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("granted_by", sa.String(100), nullable=False),
    )
    op.create_table(
        "role_changes",
        sa.Column("change_id", sa.BigInteger, sa.Identity(), primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False, index=True),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("granted", sa.Boolean, nullable=False),
        sa.Column("changed_by", sa.String(100), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "applied_sanctions",
        sa.Column("sanction_id", sa.String(36), primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False, index=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("case_id", sa.String(36), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "blocked_identifiers",
        sa.Column("kind", sa.String(10), primary_key=True),
        sa.Column("value", sa.String(254), primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False),
        sa.Column("sanction_id", sa.String(36), nullable=False),
        sa.Column("blocked_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("blocked_identifiers", "applied_sanctions", "role_changes", "account_roles"):
        op.drop_table(table)
