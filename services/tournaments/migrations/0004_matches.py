"""a row per bracket match

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-05

The bracket was one JSON document on the tournament's row, rewritten whole by every
change (each game created, each result): a 1,024-entrant bracket is 1,023 matches. Each
match is now a row of ``tournament_matches`` (its seats, game, winner and decision), so a
change writes the one or two matches it touched; the drawn seating order moves to the
tournament's ``seating`` column. Existing brackets are copied over, then the column goes.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tournament_matches",
        sa.Column(
            "tournament_id",
            sa.String(36),
            sa.ForeignKey("tournaments.tournament_id"),
            primary_key=True,
        ),
        sa.Column("round", sa.SmallInteger, primary_key=True),
        sa.Column("position", sa.SmallInteger, primary_key=True),
        sa.Column("top", sa.String(36)),
        sa.Column("bottom", sa.String(36)),
        sa.Column("game_id", sa.String(64), nullable=False),
        sa.Column("winner", sa.String(36)),
        sa.Column("decision", sa.String(16)),
    )
    op.add_column("tournaments", sa.Column("seating", JSONB))
    op.execute(
        """
        INSERT INTO tournament_matches
            (tournament_id, round, position, top, bottom, game_id, winner, decision)
        SELECT t.tournament_id, r.number, m.number - 1,
               m.match -> 'players' ->> 0, m.match -> 'players' ->> 1,
               coalesce(m.match ->> 'game_id', ''), m.match ->> 'winner',
               m.match ->> 'decision'
        FROM tournaments t,
             jsonb_array_elements(t.bracket -> 'rounds') WITH ORDINALITY AS r(matches, number),
             jsonb_array_elements(r.matches) WITH ORDINALITY AS m(match, number)
        WHERE t.bracket IS NOT NULL
        """
    )
    op.execute("UPDATE tournaments SET seating = bracket -> 'order' WHERE bracket IS NOT NULL")
    op.drop_column("tournaments", "bracket")


def downgrade() -> None:
    op.add_column("tournaments", sa.Column("bracket", JSONB))
    op.execute(
        """
        UPDATE tournaments t SET bracket = jsonb_build_object(
            'field', jsonb_array_length(t.seating),
            'order', t.seating,
            'rounds', (
                SELECT jsonb_agg(matches ORDER BY round)
                FROM (
                    SELECT round, jsonb_agg(jsonb_build_object(
                        'players', jsonb_build_array(top, bottom),
                        'game_id', game_id, 'winner', winner, 'decision', decision
                    ) ORDER BY position) AS matches
                    FROM tournament_matches WHERE tournament_id = t.tournament_id
                    GROUP BY round
                ) AS by_round
            )
        )
        WHERE t.seating IS NOT NULL
        """
    )
    op.drop_column("tournaments", "seating")
    op.drop_table("tournament_matches")
