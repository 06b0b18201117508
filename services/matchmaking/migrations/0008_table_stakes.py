"""table stakes: a lobby table's bring-in, its games, its leaver and each seat's stake left

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-05

A table-stakes table plays money games one after another on the two holds of its
bring-ins: ``table_stakes_minor`` (0 at other tables), ``games_played`` (the latest
game is ``game_id``), ``leaving_account_id`` (a player who asked to leave: no further
game starts) and each seat's ``stake_left`` (their hold after the last settled game).
An index on ``game_id`` finds the table of a settled game.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "lobby_tables",
        sa.Column("table_stakes_minor", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.add_column(
        "lobby_tables", sa.Column("games_played", sa.Integer, nullable=False, server_default="0")
    )
    op.add_column("lobby_tables", sa.Column("leaving_account_id", sa.String(36)))
    op.add_column(
        "lobby_seats", sa.Column("stake_left", sa.BigInteger, nullable=False, server_default="0")
    )
    op.create_index("lobby_tables_game", "lobby_tables", ["game_id"])


def downgrade() -> None:
    op.drop_index("lobby_tables_game", table_name="lobby_tables")
    op.drop_column("lobby_seats", "stake_left")
    op.drop_column("lobby_tables", "leaving_account_id")
    op.drop_column("lobby_tables", "games_played")
    op.drop_column("lobby_tables", "table_stakes_minor")
