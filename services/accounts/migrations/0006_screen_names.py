"""screen names: the canonical form of each chosen name, unique

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-05

``accounts.screen_name_key``: ``services/accounts/screen_names.py``'s canonical form
of the display name (case and look-alike characters folded), under a unique index
so that of two concurrent registrations of look-alike names one wins. NULL for the
accounts already open: their display names were taken under looser rules (any case,
'.', up to 24 characters) and are not screen names until their owners choose one
(``SetScreenName``, once). No key is computed here: a migration does not run the
service's rules, which may change after it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Unbounded: folding may turn one character into several (Cyrillic Ы is "bl").
    op.add_column("accounts", sa.Column("screen_name_key", sa.Text()))
    op.create_index("ix_accounts_screen_name_key", "accounts", ["screen_name_key"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("ix_accounts_screen_name_key", table_name="accounts")
    op.drop_column("accounts", "screen_name_key")
