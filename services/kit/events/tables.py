"""The outbox and inbox tables every service's database holds."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Identity,
    Index,
    LargeBinary,
    MetaData,
    String,
    Table,
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
