"""play facts for the rating-manipulation, deliberate-disconnect and dumping-play detectors

Revision ID: 0006
Revises: 0004
Create Date: 2026-12-01

Session results, session analyses and rating changes; see services/antiabuse/results_store.py.
Written out here rather than read from that module. (The lead rechains this after 0005.)
Also: a disconnection is kept once per (game, account, time), not once per event id, so
the same fact re-published under a new id is not counted twice (duplicates removed first).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.create_table(
        "session_results",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("winner_account_id", sa.String(ID), nullable=False),
        sa.Column("loser_account_id", sa.String(ID), nullable=False),
        sa.Column("low_account_id", sa.String(ID), nullable=False),
        sa.Column("high_account_id", sa.String(ID), nullable=False),
        sa.Column("reason", sa.SmallInteger, nullable=False),
        sa.Column("leaver_account_id", sa.String(ID)),
        sa.Column("leaver_share", sa.Float),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "session_results_by_pair",
        "session_results",
        ["low_account_id", "high_account_id", "ended_at"],
    )
    op.create_index(
        "session_results_by_leaver", "session_results", ["leaver_account_id", "ended_at"]
    )
    op.create_table(
        "session_analyses",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("account_id", sa.String(ID), primary_key=True),
        sa.Column("error_per_decision", sa.Float, nullable=False),
        sa.Column("decisions", sa.Integer, nullable=False),
        sa.Column("worst_take_error", sa.Float, nullable=False),
        sa.Column("worst_pass_error", sa.Float, nullable=False),
        sa.Column("analysed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("session_analyses_by_account", "session_analyses", ["account_id"])
    op.create_table(
        "rating_changes",
        sa.Column("game_id", sa.String(ID), primary_key=True),
        sa.Column("account_id", sa.String(ID), primary_key=True),
        sa.Column("opponent_account_id", sa.String(ID), nullable=False),
        sa.Column("previous_rating", sa.Float, nullable=False),
        sa.Column("new_rating", sa.Float, nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("rating_changes_by_account", "rating_changes", ["account_id", "changed_at"])
    op.execute(
        "DELETE FROM disconnects a USING disconnects b WHERE a.game_id = b.game_id"
        " AND a.account_id = b.account_id AND a.occurred_at = b.occurred_at"
        " AND a.event_id > b.event_id"
    )
    op.create_index(
        "disconnects_once",
        "disconnects",
        ["game_id", "account_id", "occurred_at"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("disconnects_once", table_name="disconnects")
    op.drop_index("rating_changes_by_account", table_name="rating_changes")
    op.drop_table("rating_changes")
    op.drop_index("session_analyses_by_account", table_name="session_analyses")
    op.drop_table("session_analyses")
    op.drop_index("session_results_by_leaver", table_name="session_results")
    op.drop_index("session_results_by_pair", table_name="session_results")
    op.drop_table("session_results")
