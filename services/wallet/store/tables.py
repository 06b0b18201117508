"""The wallet's tables (SQLAlchemy Core metadata); the migrations create them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
)

metadata = MetaData()
_TS = DateTime(timezone=True)

ledger_accounts = Table(
    "ledger_accounts",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("owner", String(100)),
    Column("debits", BigInteger, nullable=False),
    Column("credits", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("created_at", _TS),
)

transfers = Table(
    "transfers",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("debit_account_id", String(200), nullable=False),
    Column("credit_account_id", String(200), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
    Column("code", SmallInteger, nullable=False),
    Column("reference", String(300), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("posted_at", _TS, nullable=False),
)

# A view (migration 0006): each transfer's debit leg (negative) and credit leg.
entries = Table(
    "entries",
    metadata,
    Column("transfer_id", String(300), primary_key=True),
    Column("account_id", String(200), primary_key=True),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
)

holds = Table(
    "holds",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("player_id", String(100), nullable=False),
    Column("table_id", String(100), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("game_id", String(100)),
    Column("idempotency_key", String(200), nullable=False),
    Column("release_reason", String(300)),
    Column("created_at", _TS, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

payments = Table(
    "payments",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("method", String(200), nullable=False),
    Column("provider", String(50), nullable=False),
    Column("provider_reference", String(200)),
    Column("failure_reason", String(500)),
    # The provider's fingerprint of the card or account (an opaque token, never the number).
    Column("instrument_fingerprint", String(128)),
    Column("idempotency_key", String(200), nullable=False),
    Column("created_at", _TS, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

players = Table(
    "players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("frozen_reason", String(500)),
    Column("frozen_alert_id", String(100)),
    Column("self_excluded_from", _TS),
    Column("self_excluded_until", _TS),
    Column("self_excluded_indefinitely", Boolean, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

deposit_limits = Table(
    "deposit_limits",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("currency", String(8), primary_key=True),
    Column("period", String(8), primary_key=True),
    Column("amount", BigInteger),
    Column("pending_amount", BigInteger),
    Column("pending_effective_at", _TS),
    Column("updated_at", _TS, nullable=False),
)

settlements = Table(
    "settlements",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("game_id", String(100), nullable=False),
    Column("game_number", Integer, nullable=False),
    Column("table_id", String(100), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("winner_id", String(100)),
    Column("loser_id", String(100)),
    Column("win_sum", BigInteger, nullable=False),
    Column("commission_total", BigInteger, nullable=False),
    Column("rate", String(40), nullable=False),
    Column("schedule_version", String(100), nullable=False),
    Column("disconnection", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("detail", String(1000)),
    Column("source_event_id", String(64), nullable=False),
    Column("settled_at", _TS, nullable=False),
)

# Provider webhooks already applied (migration 0007): the event id makes each apply once.
provider_events = Table(
    "provider_events",
    metadata,
    Column("event_id", String(200), primary_key=True),
    Column("payment_id", String(100), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("occurred_at", _TS, nullable=False),
    Column("received_at", _TS, nullable=False),
)
