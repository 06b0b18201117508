"""the house's prize fund, one account per currency

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05

``house_prizes:<CUR>`` is where the house money added to tournament prize pools
comes from (freerolls, added prizes: ``AddToPool``). Like the provider's clearing
account and the play-money issue account it stands for money outside the ledger
(the house's prize budget) and may go below zero, by what the house added and did
not get back, so the non-negative CHECK names it too. Sharded like every system
account (migration 0003).
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SHARDS = 16  # migration 0003
CURRENCIES = ("USD", "EUR", "GBP", "PLAY")  # migration 0002's seeded currencies
KIND = "house_prizes"


def upgrade() -> None:
    op.drop_constraint("balance_not_negative", "ledger_accounts", type_="check")
    op.create_check_constraint(
        "balance_not_negative",
        "ledger_accounts",
        f"kind IN ('provider_clearing', 'play_money_issue', '{KIND}') OR credits >= debits",
    )
    for currency in CURRENCIES:
        account = f"{KIND}:{currency}"
        op.execute(
            f"INSERT INTO ledger_accounts (id, kind, currency) VALUES ('{account}', '{KIND}', "
            f"'{currency}')"
        )
        op.execute(
            "INSERT INTO system_balance_shards (account_id, shard) "
            f"SELECT '{account}', shard FROM generate_series(0, {SHARDS - 1}) AS shard"
        )


def downgrade() -> None:
    op.execute(f"DELETE FROM system_balance_shards WHERE account_id LIKE '{KIND}:%'")
    op.execute(f"DELETE FROM ledger_accounts WHERE kind = '{KIND}'")
    op.drop_constraint("balance_not_negative", "ledger_accounts", type_="check")
    op.create_check_constraint(
        "balance_not_negative",
        "ledger_accounts",
        "kind IN ('provider_clearing', 'play_money_issue') OR credits >= debits",
    )
