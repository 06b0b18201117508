"""queue_tickets: the auto-match queue's tickets

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

One row per EnterQueue (unique per player and idempotency key). ``pool`` is the
rules as one string: tickets with equal rules are paired with each other. A
player has at most one live ticket (waiting or seating) per pool, held by a
partial unique index. The ticket keeps the player's declared residence and the
client signals of the call that entered it, since the seating asks geo with them
when the ticket is paired. ``table_id`` names the lobby table a pair is seated at.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_LIVE = sa.text("status IN ('waiting', 'seating')")


def upgrade() -> None:
    op.create_table(
        "queue_tickets",
        sa.Column("ticket_id", sa.String(36), primary_key=True),
        sa.Column("account_id", sa.String(36), nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("pool", sa.String(120), nullable=False),
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
        sa.Column("max_rating_difference", sa.Float, nullable=False),
        sa.Column("residence", sa.String(10), nullable=False),
        sa.Column("client_address", sa.String(45), nullable=False),
        sa.Column("device_id", sa.String(128), nullable=False),
        sa.Column("entered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("table_id", sa.String(36)),
        sa.Column("game_id", sa.String(64)),
        sa.Column("opponent_account_id", sa.String(36)),
        sa.Column("rating", sa.Float),
        sa.Column("opponent_rating", sa.Float),
        sa.Column("reason", sa.String(300)),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("stake_minor > 0", name="queue_tickets_stake_positive"),
        sa.CheckConstraint(
            "status IN ('waiting', 'seating', 'matched', 'cancelled', 'refused')",
            name="queue_tickets_status",
        ),
        sa.UniqueConstraint("account_id", "idempotency_key", name="queue_tickets_account_key"),
    )
    # One live ticket per player per pool.
    op.create_index(
        "queue_tickets_one_live",
        "queue_tickets",
        ["account_id", "pool"],
        unique=True,
        postgresql_where=_LIVE,
    )
    # A wave reads one pool's waiting tickets; the seating finds a table's tickets.
    op.create_index(
        "queue_tickets_waiting",
        "queue_tickets",
        ["pool"],
        postgresql_where=sa.text("status = 'waiting'"),
    )
    op.create_index("queue_tickets_table", "queue_tickets", ["table_id"])


def downgrade() -> None:
    op.drop_table("queue_tickets")
