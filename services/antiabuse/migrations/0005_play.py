"""play facts for the assistance and consulting detectors

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

Analysed decisions per player, game windows per player, the population's running
sums; see services/antiabuse/play_store.py.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "analysed_decisions",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("account_id", sa.String(ID), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("game_number", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(12), nullable=False),
        sa.Column("counted", sa.Boolean, nullable=False),
        sa.Column("error", sa.Float, nullable=False),
        sa.Column("seconds", sa.Float),
        sa.Column("analysed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "analysed_decisions_by_account", "analysed_decisions", ["account_id", "analysed_at"]
    )
    op.create_table(
        "game_windows",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("game_number", sa.Integer, primary_key=True),
        sa.Column("account_id", sa.String(ID), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
    )
    op.create_index("game_windows_by_account", "game_windows", ["account_id", "started_at"])
    op.create_table(
        "decision_population",
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("decisions", sa.BigInteger, nullable=False),
        sa.Column("error_sum", sa.Float, nullable=False),
        sa.Column("error_squares", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("decision_population")
    op.drop_index("game_windows_by_account", table_name="game_windows")
    op.drop_table("game_windows")
    op.drop_index("analysed_decisions_by_account", table_name="analysed_decisions")
    op.drop_table("analysed_decisions")
