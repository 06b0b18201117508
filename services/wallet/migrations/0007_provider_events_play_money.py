"""provider webhook events, and the house's play-money issue account

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

``provider_events`` records every signed provider webhook the wallet applied,
in the same transaction as its effect, so a redelivered event changes nothing
(the provider's event id is the key) and an older one than the newest applied
to a payment is refused. ``play_money_issue:PLAY`` is where free play-money
top-ups come from; like the provider's clearing account it may go below zero
(by the play money handed out), so the non-negative CHECK names both.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)
SHARDS = 16  # migration 0003
PLAY_ISSUE = "play_money_issue:PLAY"


def upgrade() -> None:
    op.create_table(
        "provider_events",
        sa.Column("event_id", sa.String(200), primary_key=True),
        sa.Column("payment_id", sa.String(100), sa.ForeignKey("payments.id"), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("occurred_at", _TS, nullable=False),
        sa.Column("received_at", _TS, nullable=False),
    )
    op.create_index("provider_events_payment", "provider_events", ["payment_id", "occurred_at"])
    op.drop_constraint("balance_not_negative", "ledger_accounts", type_="check")
    op.create_check_constraint(
        "balance_not_negative",
        "ledger_accounts",
        "kind IN ('provider_clearing', 'play_money_issue') OR credits >= debits",
    )
    op.execute(
        "INSERT INTO ledger_accounts (id, kind, currency) "
        f"VALUES ('{PLAY_ISSUE}', 'play_money_issue', 'PLAY')"
    )
    op.execute(
        "INSERT INTO system_balance_shards (account_id, shard) "
        f"SELECT '{PLAY_ISSUE}', shard FROM generate_series(0, {SHARDS - 1}) AS shard"
    )
    # Top-ups are rate-limited per player by their newest top-up transfer.
    op.create_index(
        "transfers_play_top_ups",
        "transfers",
        ["credit_account_id", "posted_at"],
        postgresql_where=sa.text("code = 4"),
    )


def downgrade() -> None:
    op.drop_index("transfers_play_top_ups", "transfers")
    op.drop_table("provider_events")
    op.execute(f"DELETE FROM system_balance_shards WHERE account_id = '{PLAY_ISSUE}'")
    op.execute(f"DELETE FROM ledger_accounts WHERE id = '{PLAY_ISSUE}'")
    op.drop_constraint("balance_not_negative", "ledger_accounts", type_="check")
    op.create_check_constraint(
        "balance_not_negative", "ledger_accounts", "kind = 'provider_clearing' OR credits >= debits"
    )
