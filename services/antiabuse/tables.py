"""The anti-abuse service's tables (SQLAlchemy Core), created by migration 0002.

Facts kept from other services' streams, only what detectors need:
``sightings`` (an account seen with a device, address, network, mailbox, name),
``pair_games`` (who played whom), ``transfers`` (what each settled game moved),
``disconnects``; and the service's own records: ``alerts`` (each the full
ComplianceAlert message, with the columns it is filtered by), ``alert_subjects``,
``alert_history`` (each raise and update, migration 0009) and ``pair_restrictions``
(verdicts published, one standing per pair and reason; lifted ones kept, migration 0014).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    text,
)

metadata = MetaData()

ID = 64

sightings = Table(
    "sightings",
    metadata,
    Column("account_id", String(ID), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("value", String(200), primary_key=True),
    Column("first_seen", DateTime(timezone=True), nullable=False),
    Column("last_seen", DateTime(timezone=True), nullable=False),
    Index("sightings_by_value", "kind", "value"),
)

pair_games = Table(
    "pair_games",
    metadata,
    Column("game_id", String(ID), primary_key=True),
    Column("low_account_id", String(ID), nullable=False),
    Column("high_account_id", String(ID), nullable=False),
    Column("seen_at", DateTime(timezone=True), nullable=False),
    Index("pair_games_by_pair", "low_account_id", "high_account_id"),
)

transfers = Table(
    "transfers",
    metadata,
    Column("settlement_id", String(ID), primary_key=True),
    Column("game_id", String(ID), nullable=False),
    Column("loser_account_id", String(ID), nullable=False),
    Column("winner_account_id", String(ID), nullable=False),
    Column("low_account_id", String(ID), nullable=False),
    Column("high_account_id", String(ID), nullable=False),
    Column("amount_minor", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Index("transfers_by_pair", "low_account_id", "high_account_id", "occurred_at"),
)

disconnects = Table(
    "disconnects",
    metadata,
    Column("event_id", String(ID), primary_key=True),
    Column("game_id", String(ID), nullable=False),
    Column("account_id", String(ID), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Index("disconnects_by_account", "account_id", "occurred_at"),
    # The same disconnection under a new event id is the same fact (migration 0006).
    Index("disconnects_once", "game_id", "account_id", "occurred_at", unique=True),
)

alerts = Table(
    "alerts",
    metadata,
    Column("alert_id", String(ID), primary_key=True),
    # Detector, subjects and severity as raised (several alerts may share it: migration 0009).
    Column("fingerprint", String(64), nullable=False),
    Column("detector", String(40), nullable=False),
    Column("kind", SmallInteger, nullable=False),
    Column("severity", SmallInteger, nullable=False),
    Column("status", SmallInteger, nullable=False),
    Column("raised_at", DateTime(timezone=True), nullable=False),
    Column("message", LargeBinary, nullable=False),
    # Detector and subjects: the latest alert of a behaviour (domain/alert_lifecycle.py).
    Column("subject_key", String(64), nullable=False, server_default=""),
    Column("evidence_digest", String(64), nullable=False, server_default=""),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("alerts_newest", "raised_at", "alert_id"),
    Index("alerts_by_subject_key", "subject_key", "raised_at"),
)

# Each raise and update of an alert (an AlertRevision message), oldest first.
alert_history = Table(
    "alert_history",
    metadata,
    Column("alert_id", String(ID), primary_key=True),
    Column("sequence", Integer, primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False),
    Column("message", LargeBinary, nullable=False),
)

alert_subjects = Table(
    "alert_subjects",
    metadata,
    Column("alert_id", String(ID), primary_key=True),
    Column("account_id", String(ID), primary_key=True),
    Index("alert_subjects_by_account", "account_id"),
)

pair_restrictions = Table(
    "pair_restrictions",
    metadata,
    Column("restriction_id", String(ID), primary_key=True),
    Column("low_account_id", String(ID), nullable=False),
    Column("high_account_id", String(ID), nullable=False),
    Column("reason", SmallInteger, nullable=False),
    Column("alert_id", String(ID), nullable=False),
    Column("restricted_at", DateTime(timezone=True), nullable=False),
    # Lifted when the judgement it rests on changed (migration 0014); standing while null.
    Column("lifted_at", DateTime(timezone=True)),
    Column("lift_detail", Text),
    Index("pair_restrictions_standing", "low_account_id", "high_account_id", "reason",
          unique=True, postgresql_where=text("lifted_at IS NULL")),
)
