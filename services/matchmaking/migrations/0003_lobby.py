"""lobby: tables, their seats, and the pairs anti-abuse forbids

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

A table row is the lobby's aggregate (its status moves open -> seating ->
playing, or back to open, or to closed); a seat row per player at it, with the
residence and client signals recorded when they sat (the owner's are asked
about again when the second player sits). ``forbidden_pairs`` is fed by the
anti-abuse service's PairRestricted / PairRestrictionLifted events (through the
inbox), one row per restriction, the pair stored in sorted order.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lobby_tables",
        sa.Column("table_id", sa.String(36), primary_key=True),
        sa.Column("owner_account_id", sa.String(36), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("kind", sa.String(12), nullable=False),
        sa.Column("match_length", sa.Integer, nullable=False),
        sa.Column("stake_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("cube_cap", sa.Integer, nullable=False),
        sa.Column("beaver", sa.Boolean, nullable=False),
        sa.Column("jacoby", sa.Boolean, nullable=False),
        sa.Column("crawford", sa.Boolean, nullable=False),
        sa.Column("clock", sa.String(20), nullable=False),
        sa.Column("min_rating", sa.Integer),
        sa.Column("max_rating", sa.Integer),
        sa.Column("invited_account_id", sa.String(36)),
        sa.Column("game_id", sa.String(64)),
        sa.Column("attempt_id", sa.String(36)),
        sa.Column("attempt_account_id", sa.String(36)),
        sa.Column("attempt_deadline", sa.DateTime(timezone=True)),
        sa.Column("close_reason", sa.String(200)),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("stake_minor > 0", name="lobby_tables_stake_positive"),
        sa.CheckConstraint(
            "status IN ('open', 'seating', 'playing', 'closed')", name="lobby_tables_status"
        ),
        # A retried CreateTable finds the table its key opened.
        sa.UniqueConstraint(
            "owner_account_id", "idempotency_key", name="lobby_tables_owner_key"
        ),
    )
    # The lobby lists open tables, newest first, per currency.
    op.create_index(
        "lobby_tables_listing",
        "lobby_tables",
        ["status", "currency", sa.text("created_at DESC"), "table_id"],
    )
    op.create_table(
        "lobby_seats",
        sa.Column(
            "table_id",
            sa.String(36),
            sa.ForeignKey("lobby_tables.table_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("seat", sa.SmallInteger, primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False),
        sa.Column("residence", sa.String(10), nullable=False),
        sa.Column("client_address", sa.String(45), nullable=False),
        sa.Column("device_id", sa.String(128), nullable=False),
        sa.Column("rating", sa.Float),
        sa.Column("hold_id", sa.String(64), nullable=False),
        sa.Column("sat_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("seat IN (0, 1)", name="lobby_seats_two"),
        # Nobody sits twice at one table: not against themselves either.
        sa.UniqueConstraint("table_id", "account_id", name="lobby_seats_once"),
    )
    op.create_table(
        "forbidden_pairs",
        sa.Column("restriction_id", sa.String(64), primary_key=True),
        # The pair in sorted order (low < high), whichever order the event named them.
        sa.Column("low_account_id", sa.String(36), nullable=False),
        sa.Column("high_account_id", sa.String(36), nullable=False),
        sa.Column("reason", sa.String(40), nullable=False),
        sa.Column("detail", sa.String(500), nullable=False),
        sa.Column("alert_id", sa.String(64), nullable=False),
        sa.Column("restricted_at", sa.DateTime(timezone=True)),
        sa.Column("lifted_at", sa.DateTime(timezone=True)),
        sa.CheckConstraint("low_account_id < high_account_id", name="forbidden_pairs_sorted"),
    )
    op.create_index(
        "forbidden_pairs_standing",
        "forbidden_pairs",
        ["low_account_id", "high_account_id"],
        postgresql_where=sa.text("lifted_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("forbidden_pairs_standing", table_name="forbidden_pairs")
    op.drop_table("forbidden_pairs")
    op.drop_table("lobby_seats")
    op.drop_index("lobby_tables_listing", table_name="lobby_tables")
    op.drop_table("lobby_tables")
