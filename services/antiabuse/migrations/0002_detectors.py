"""detector facts (sightings, pair games, transfers, disconnects), alerts, pair restrictions

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Written out here rather than read from services/antiabuse/tables.py, so later
changes to the tables need revisions of their own.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

ID = 64


def _at(name: str) -> sa.Column[Any]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def _id(name: str, *, primary_key: bool = False) -> sa.Column[Any]:
    return sa.Column(name, sa.String(ID), nullable=False, primary_key=primary_key)


def upgrade() -> None:
    op.create_table(
        "sightings",
        _id("account_id", primary_key=True),
        sa.Column("kind", sa.String(16), primary_key=True),
        sa.Column("value", sa.String(200), primary_key=True),
        _at("first_seen"),
        _at("last_seen"),
    )
    op.create_index("sightings_by_value", "sightings", ["kind", "value"])
    op.create_table(
        "pair_games",
        _id("game_id", primary_key=True),
        _id("low_account_id"),
        _id("high_account_id"),
        _at("seen_at"),
    )
    op.create_index("pair_games_by_pair", "pair_games", ["low_account_id", "high_account_id"])
    op.create_table(
        "transfers",
        _id("settlement_id", primary_key=True),
        _id("game_id"),
        _id("loser_account_id"),
        _id("winner_account_id"),
        _id("low_account_id"),
        _id("high_account_id"),
        sa.Column("amount_minor", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        _at("occurred_at"),
    )
    op.create_index(
        "transfers_by_pair", "transfers", ["low_account_id", "high_account_id", "occurred_at"]
    )
    op.create_table(
        "disconnects",
        _id("event_id", primary_key=True),
        _id("game_id"),
        _id("account_id"),
        _at("occurred_at"),
    )
    op.create_index("disconnects_by_account", "disconnects", ["account_id", "occurred_at"])
    op.create_table(
        "alerts",
        _id("alert_id", primary_key=True),
        sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
        sa.Column("detector", sa.String(40), nullable=False),
        sa.Column("kind", sa.SmallInteger, nullable=False),
        sa.Column("severity", sa.SmallInteger, nullable=False),
        sa.Column("status", sa.SmallInteger, nullable=False),
        _at("raised_at"),
        sa.Column("message", sa.LargeBinary, nullable=False),
    )
    op.create_index("alerts_newest", "alerts", ["raised_at", "alert_id"])
    op.create_table(
        "alert_subjects",
        _id("alert_id", primary_key=True),
        _id("account_id", primary_key=True),
    )
    op.create_index("alert_subjects_by_account", "alert_subjects", ["account_id"])
    op.create_table(
        "pair_restrictions",
        _id("restriction_id", primary_key=True),
        _id("low_account_id"),
        _id("high_account_id"),
        sa.Column("reason", sa.SmallInteger, nullable=False),
        _id("alert_id"),
        _at("restricted_at"),
        sa.UniqueConstraint("low_account_id", "high_account_id", "reason"),
    )


def downgrade() -> None:
    for table in (
        "pair_restrictions",
        "alert_subjects",
        "alerts",
        "disconnects",
        "transfers",
        "pair_games",
        "sightings",
    ):
        op.drop_table(table)
