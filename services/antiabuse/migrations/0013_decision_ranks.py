"""analysed decisions: the play's rank and the second- and third-best plays' losses

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05

From the analysis' DecisionAnalysis (rank, second_loss, third_loss): the assistance
detector's choice test reads them (services/antiabuse/domain/assistance.py). Null for
cube decisions and for decisions analysed before the analysis published them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("analysed_decisions", sa.Column("rank", sa.SmallInteger))
    op.add_column("analysed_decisions", sa.Column("second_loss", sa.Float))
    op.add_column("analysed_decisions", sa.Column("third_loss", sa.Float))


def downgrade() -> None:
    for column in ("third_loss", "second_loss", "rank"):
        op.drop_column("analysed_decisions", column)
