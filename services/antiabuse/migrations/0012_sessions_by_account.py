"""session results found by either player: the sessions an account played

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05

Deliberate disconnects count the sessions a player played in the window (both sides of
the pair: `session_results_by_pair` leads with the lower id, this index with the higher).
See services/antiabuse/results_store.py (`ResultFacts.sessions_played`).
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "session_results_by_high", "session_results", ["high_account_id", "ended_at"]
    )


def downgrade() -> None:
    op.drop_index("session_results_by_high", table_name="session_results")
