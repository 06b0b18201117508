"""account_paces: each account's counted think times and the sum of their logs

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06

One row per account, added to on each MatchAnalysed (tavla.analysis.v1); read by consulting
as the population's paces (an other account with no games of its own among the slowest).
Filled from the decisions kept so far. See services/antiabuse/play_store.py. Written out here
rather than read from that module.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "account_paces",
        sa.Column("account_id", sa.String(ID), primary_key=True),
        sa.Column("think_times", sa.Integer, nullable=False),
        sa.Column("log_seconds", sa.Float, nullable=False),
    )
    # The same log as the store's (0.1 s at least).
    op.execute(
        "INSERT INTO account_paces (account_id, think_times, log_seconds) "
        "SELECT account_id, count(*), sum(ln(greatest(seconds, 0.1))) "
        "FROM analysed_decisions WHERE counted AND seconds IS NOT NULL GROUP BY account_id"
    )


def downgrade() -> None:
    op.drop_table("account_paces")
