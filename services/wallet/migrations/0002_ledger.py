"""ledger accounts, transfers, entries, holds, payments, players, deposit limits, settlements

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Currencies whose system accounts exist from the start (domain.money.MINOR_UNIT_EXPONENTS).
SEEDED_CURRENCIES = ("USD", "EUR", "GBP", "PLAY")
SYSTEM_KINDS = ("house_commission", "provider_clearing", "held_stakes")

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    _ledger_tables()
    _hold_and_payment_tables()
    _player_tables()
    _settlement_table()
    _seed_system_accounts()


def _ledger_tables() -> None:
    op.create_table(
        "ledger_accounts",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("owner", sa.String(100)),
        sa.Column("debits", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("credits", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("version", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_at", _TS, nullable=False, server_default=sa.func.now()),
        sa.CheckConstraint("debits >= 0 AND credits >= 0", name="totals_not_negative"),
        # The last line of defence behind the domain's check: only the provider's
        # clearing account may go below zero (it owes the players their deposits).
        sa.CheckConstraint(
            "kind = 'provider_clearing' OR credits >= debits", name="balance_not_negative"
        ),
        sa.CheckConstraint("(kind = 'player') = (owner IS NOT NULL)", name="player_has_owner"),
    )
    op.create_index("ledger_accounts_owner", "ledger_accounts", ["owner"])
    op.create_table(
        "transfers",
        sa.Column("id", sa.String(300), primary_key=True),
        sa.Column(
            "debit_account_id", sa.String(200), sa.ForeignKey("ledger_accounts.id"), nullable=False
        ),
        sa.Column(
            "credit_account_id", sa.String(200), sa.ForeignKey("ledger_accounts.id"), nullable=False
        ),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("code", sa.SmallInteger, nullable=False),
        sa.Column("reference", sa.String(300), nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("posted_at", _TS, nullable=False),
        sa.CheckConstraint("amount > 0", name="amount_positive"),
        sa.CheckConstraint("debit_account_id <> credit_account_id", name="two_accounts"),
    )
    op.create_index("transfers_reference", "transfers", ["reference"])
    op.create_table(
        "entries",
        sa.Column("transfer_id", sa.String(300), sa.ForeignKey("transfers.id"), primary_key=True),
        sa.Column(
            "account_id", sa.String(200), sa.ForeignKey("ledger_accounts.id"), primary_key=True
        ),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
    )
    op.create_index("entries_account", "entries", ["account_id"])
    # The ledger is append-only: an UPDATE or DELETE of a posted transfer is a bug or an attack.
    op.execute(
        """
        CREATE FUNCTION wallet_refuse_change() RETURNS trigger AS $$
        BEGIN
          RAISE EXCEPTION '% rows are immutable: post a correcting transfer instead', TG_TABLE_NAME;
        END $$ LANGUAGE plpgsql
        """
    )
    for table in ("transfers", "entries"):
        op.execute(
            f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION wallet_refuse_change()"
        )


def _hold_and_payment_tables() -> None:
    op.create_table(
        "holds",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("player_id", sa.String(100), nullable=False),
        sa.Column("table_id", sa.String(100), nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("game_id", sa.String(100)),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("release_reason", sa.String(300)),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.CheckConstraint("amount > 0", name="hold_positive"),
    )
    op.create_index("holds_player_open", "holds", ["player_id"], postgresql_where="status = 'open'")
    op.create_index("holds_table", "holds", ["table_id"])
    op.create_table(
        "payments",
        sa.Column("id", sa.String(100), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("player_id", sa.String(100), nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("amount", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("method", sa.String(200), nullable=False),
        sa.Column("provider", sa.String(50), nullable=False),
        sa.Column("provider_reference", sa.String(200)),
        sa.Column("failure_reason", sa.String(500)),
        sa.Column("idempotency_key", sa.String(200), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
        sa.CheckConstraint("amount > 0", name="payment_positive"),
    )
    op.create_index("payments_player_created", "payments", ["player_id", "created_at"])
    op.create_index(
        "payments_requested", "payments", ["created_at"], postgresql_where="status = 'requested'"
    )


def _player_tables() -> None:
    op.create_table(
        "players",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("frozen_reason", sa.String(500)),
        sa.Column("frozen_alert_id", sa.String(100)),
        sa.Column("self_excluded_from", _TS),
        sa.Column("self_excluded_until", _TS),
        sa.Column("self_excluded_indefinitely", sa.Boolean, nullable=False, server_default="false"),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "deposit_limits",
        sa.Column("player_id", sa.String(100), primary_key=True),
        sa.Column("currency", sa.String(8), primary_key=True),
        sa.Column("period", sa.String(8), primary_key=True),
        sa.Column("amount", sa.BigInteger),
        sa.Column("pending_amount", sa.BigInteger),
        sa.Column("pending_effective_at", _TS),
        sa.Column("updated_at", _TS, nullable=False),
    )


def _settlement_table() -> None:
    op.create_table(
        "settlements",
        sa.Column("id", sa.String(200), primary_key=True),
        sa.Column("game_id", sa.String(100), nullable=False),
        sa.Column("game_number", sa.Integer, nullable=False),
        sa.Column("table_id", sa.String(100), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("currency", sa.String(8), nullable=False),
        sa.Column("winner_id", sa.String(100)),
        sa.Column("loser_id", sa.String(100)),
        sa.Column("win_sum", sa.BigInteger, nullable=False),
        sa.Column("commission_total", sa.BigInteger, nullable=False),
        sa.Column("rate", sa.String(40), nullable=False),
        sa.Column("schedule_version", sa.String(100), nullable=False),
        sa.Column("disconnection", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("detail", sa.String(1000)),
        sa.Column("source_event_id", sa.String(64), nullable=False),
        sa.Column("settled_at", _TS, nullable=False),
    )
    op.create_index("settlements_table", "settlements", ["table_id", "settled_at"])


def _seed_system_accounts() -> None:
    accounts = sa.table(
        "ledger_accounts",
        sa.column("id", sa.String),
        sa.column("kind", sa.String),
        sa.column("currency", sa.String),
    )
    op.bulk_insert(
        accounts,
        [
            {"id": f"{kind}:{currency}", "kind": kind, "currency": currency}
            for currency in SEEDED_CURRENCIES
            for kind in SYSTEM_KINDS
        ],
    )


def downgrade() -> None:
    for table in ("settlements", "deposit_limits", "players", "payments", "holds", "entries"):
        op.drop_table(table)
    op.drop_table("transfers")
    op.execute("DROP FUNCTION wallet_refuse_change()")
    op.drop_table("ledger_accounts")
