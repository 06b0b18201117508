"""game_windows_by_time: the game windows that overlap a time range, found by an index

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06

Consulting asks which accounts had a game running while one of an account's games did
(services/antiabuse/play_store.py, ``PlayFacts.overlapping_accounts``), over every window
ever kept, not one account's: a GiST index on each window's span as a range. A finished
window is the closed range between its two ends (in either order: two clocks), a running
one (no end yet) runs on without bound. Rows without a start are left out. The expression
is written out here as the store writes it (``play_store.WINDOW_SPAN``).
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SPAN = (
    "(CASE WHEN ended_at IS NULL THEN tstzrange(started_at, NULL, '[)') "
    "ELSE tstzrange(least(started_at, ended_at), greatest(started_at, ended_at), '[]') END)"
)


def upgrade() -> None:
    op.execute(
        f"CREATE INDEX game_windows_by_time ON game_windows USING gist ({SPAN}) "
        "WHERE started_at IS NOT NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX game_windows_by_time")
