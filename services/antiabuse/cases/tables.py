"""The cases' tables (SQLAlchemy Core), created by migration 0004_cases.

``cases`` (one row per case, its current state), ``case_alerts`` (an alert
belongs to one case at most, enforced by its primary key), ``case_log`` (the
append-only record: who did what and when; rows are only ever inserted) and
``case_sanctions`` (each sanction once, by its id; a suspension or termination is
"proposed" until a second officer approves it).
"""

from __future__ import annotations

from sqlalchemy import Boolean, Column, DateTime, Integer, MetaData, String, Table, Text

metadata = MetaData()

ID = 64

cases = Table(
    "cases",
    metadata,
    Column("case_id", String(36), primary_key=True),
    Column("status", String(12), nullable=False),
    # Every account the case's alerts name, sorted, comma-separated.
    Column("subjects", Text, nullable=False),
    Column("assignee", String(ID), nullable=False, server_default=""),
    Column("opened_by", String(ID), nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Column("resolved_at", DateTime(timezone=True)),
    # The note of sanctions awaiting a second officer (migration 0009); "" when none.
    Column("proposal_note", Text, nullable=False, server_default=""),
)

case_alerts = Table(
    "case_alerts",
    metadata,
    Column("alert_id", String(36), primary_key=True),
    Column("case_id", String(36), nullable=False, index=True),
)

case_log = Table(
    "case_log",
    metadata,
    Column("case_id", String(36), primary_key=True),
    Column("sequence", Integer, primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("actor", String(ID), nullable=False),
    Column("action", String(16), nullable=False),
    Column("detail", Text, nullable=False),
)

case_sanctions = Table(
    "case_sanctions",
    metadata,
    Column("sanction_id", String(36), primary_key=True),
    Column("case_id", String(36), nullable=False, index=True),
    Column("kind", String(20), nullable=False),
    Column("account_id", String(ID), nullable=False),
    Column("other_account_id", String(ID), nullable=False, server_default=""),
    Column("imposed_by", String(ID), nullable=False),
    Column("automatic", Boolean, nullable=False),
    Column("imposed_at", DateTime(timezone=True), nullable=False),
    # "imposed", or "proposed": waiting for a second officer (migration 0009).
    Column("state", String(12), nullable=False, server_default="imposed"),
    Column("proposed_by", String(ID), nullable=False, server_default=""),
    Column("approved_by", String(ID), nullable=False, server_default=""),
)
