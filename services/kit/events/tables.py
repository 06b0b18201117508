"""The outbox, inbox and parked-events tables every service's database holds."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

# Kept in their own MetaData: services' stores add their own tables beside them.
event_metadata = MetaData()

outbox_row = Table(
    "outbox",
    event_metadata,
    # seq orders publication, so each aggregate's events leave in commit order.
    Column("seq", BigInteger, Identity(always=True), primary_key=True),
    Column("event_id", String(64), nullable=False, unique=True),
    Column("topic", String(200), nullable=False),
    Column("key", String(200), nullable=False),
    Column("ce_type", String(200), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Column("headers", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("sent_at", DateTime(timezone=True)),
)
Index("outbox_unsent", outbox_row.c.seq, postgresql_where=text("sent_at IS NULL"))

inbox_row = Table(
    "inbox",
    event_metadata,
    Column("event_id", String(64), primary_key=True),
    Column("consumer", String(100), primary_key=True),
    Column("ce_type", String(200), nullable=False),
    Column("processed_at", DateTime(timezone=True), nullable=False),
)


def create_event_tables_migration() -> None:
    """Call from a service's first Alembic revision: creates outbox and inbox."""
    from alembic import op

    bind = op.get_bind()
    event_metadata.create_all(bind)


def drop_event_tables_migration() -> None:
    from alembic import op

    event_metadata.drop_all(op.get_bind())


# In a MetaData of their own: the services' first revisions create ``event_metadata``,
# and a later revision of each service adds this table (create_parked_events_migration).
parked_metadata = MetaData()

parked_event_row = Table(
    "parked_events",
    parked_metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("consumer", String(100), nullable=False),
    Column("topic", String(200), nullable=False),
    # Where the record sits on the broker: parking it twice (a redelivery) keeps one row.
    Column("partition", Integer, nullable=False),
    Column("offset", BigInteger, nullable=False),
    Column("key", String(200), nullable=False),
    Column("event_id", String(200), nullable=False),
    Column("ce_type", String(200), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Column("headers", JSONB, nullable=False),
    # handler (it failed every attempt), behind_parked (an earlier event of its key is
    # parked), signature (its producer is not proven), malformed (no CloudEvents headers).
    Column("reason", String(40), nullable=False),
    Column("error", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("parked_at", DateTime(timezone=True), nullable=False),
    # Set by `tavla events replay`; the consumer applies the event and resolves the row.
    Column("replay_requested_at", DateTime(timezone=True)),
    Column("resolved_at", DateTime(timezone=True)),
    Column("resolution", String(20)),  # replayed or discarded
    UniqueConstraint("consumer", "topic", "partition", "offset"),
)
Index(
    "parked_events_open",
    parked_event_row.c.consumer,
    parked_event_row.c.topic,
    parked_event_row.c.key,
    postgresql_where=text("resolved_at IS NULL"),
)


def create_parked_events_migration() -> None:
    """Call from a service's revision that adds the consumers' parked events."""
    from alembic import op

    parked_metadata.create_all(op.get_bind())


def drop_parked_events_migration() -> None:
    from alembic import op

    parked_metadata.drop_all(op.get_bind())
