"""tournament matches: who met whom in which tournament and round, and how it was decided

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05

One row per MatchDecided with a loser (tavla.tournaments.v1); see
services/antiabuse/tournament_store.py. Written out here rather than read from that module.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "tournament_matches",
        sa.Column("tournament_id", sa.String(ID), primary_key=True),
        sa.Column("match_id", sa.String(ID), primary_key=True),
        sa.Column("round", sa.SmallInteger, nullable=False),
        sa.Column("game_id", sa.String(ID), nullable=False),
        sa.Column("winner_account_id", sa.String(ID), nullable=False),
        sa.Column("loser_account_id", sa.String(ID), nullable=False),
        sa.Column("low_account_id", sa.String(ID), nullable=False),
        sa.Column("high_account_id", sa.String(ID), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("tournament_matches_by_game", "tournament_matches", ["game_id"])
    op.create_index(
        "tournament_matches_by_low", "tournament_matches", ["low_account_id", "decided_at"]
    )
    op.create_index(
        "tournament_matches_by_high", "tournament_matches", ["high_account_id", "decided_at"]
    )


def downgrade() -> None:
    for index in ("tournament_matches_by_high", "tournament_matches_by_low",
                  "tournament_matches_by_game"):
        op.drop_index(index, table_name="tournament_matches")
    op.drop_table("tournament_matches")
