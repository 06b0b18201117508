"""each seat's last location check (real-money games)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Per seat: the client address and declared residence of its last location check
and when it was made. A call from another address, or one after the re-check
interval, is checked again; the periodic re-check uses the stored address and
residence. Outside the versioned state (a check changes no version, so it never
makes a player's ``expected_version`` stale), like ``seen0``/``seen1``. Empty
for play money, which is never checked.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SEATS = (0, 1)


def upgrade() -> None:
    for seat in SEATS:
        op.add_column("games", sa.Column(f"geo_address{seat}", sa.String(64)))
        op.add_column("games", sa.Column(f"geo_residence{seat}", sa.String(16)))
        op.add_column("games", sa.Column(f"geo_checked{seat}", sa.DateTime(timezone=True)))


def downgrade() -> None:
    for seat in SEATS:
        for column in ("geo_address", "geo_residence", "geo_checked"):
            op.drop_column("games", f"{column}{seat}")
