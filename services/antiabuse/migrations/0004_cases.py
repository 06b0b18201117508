"""cases: alerts grouped for review, their append-only log, their sanctions

Revision ID: 0004
Revises: 0003_chat
Create Date: 2026-12-01

Written out here rather than read from services/antiabuse/cases/tables.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003_chat"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "cases",
        sa.Column("case_id", sa.String(36), primary_key=True),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("subjects", sa.Text, nullable=False),
        sa.Column("assignee", sa.String(ID), nullable=False, server_default=""),
        sa.Column("opened_by", sa.String(ID), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "case_alerts",
        sa.Column("alert_id", sa.String(36), primary_key=True),
        sa.Column("case_id", sa.String(36), nullable=False, index=True),
    )
    op.create_table(
        "case_log",
        sa.Column("case_id", sa.String(36), primary_key=True),
        sa.Column("sequence", sa.Integer, primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(ID), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
    )
    op.create_table(
        "case_sanctions",
        sa.Column("sanction_id", sa.String(36), primary_key=True),
        sa.Column("case_id", sa.String(36), nullable=False, index=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("account_id", sa.String(ID), nullable=False),
        sa.Column("other_account_id", sa.String(ID), nullable=False, server_default=""),
        sa.Column("imposed_by", sa.String(ID), nullable=False),
        sa.Column("automatic", sa.Boolean, nullable=False),
        sa.Column("imposed_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("case_sanctions", "case_log", "case_alerts", "cases"):
        op.drop_table(table)
