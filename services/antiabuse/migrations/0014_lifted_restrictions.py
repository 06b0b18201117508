"""pair restrictions: lifted when the detector's judgement changes

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06

A LINKED_ACCOUNTS restriction rests on "one person" (a path of strong links); when a later
examination finds the accounts no longer one person (the computer they share turned out
to be a shared one: others at its place, more accounts than one person runs), the
multi-accounting detector lifts it (``lifted_at``, ``lift_detail``) and publishes
PairRestrictionLifted. A pair is restricted at most once per reason while it stands
(the unique index is partial), so the pair can be restricted again if the judgement
returns.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

UNIQUE = "pair_restrictions_low_account_id_high_account_id_reason_key"


def upgrade() -> None:
    op.add_column("pair_restrictions", sa.Column("lifted_at", sa.DateTime(timezone=True)))
    op.add_column("pair_restrictions", sa.Column("lift_detail", sa.Text))
    op.drop_constraint(UNIQUE, "pair_restrictions", type_="unique")
    op.create_index("pair_restrictions_standing", "pair_restrictions",
                    ["low_account_id", "high_account_id", "reason"], unique=True,
                    postgresql_where=sa.text("lifted_at IS NULL"))


def downgrade() -> None:
    op.drop_index("pair_restrictions_standing", "pair_restrictions")
    op.execute("DELETE FROM pair_restrictions WHERE lifted_at IS NOT NULL")
    op.create_unique_constraint(UNIQUE, "pair_restrictions",
                                ["low_account_id", "high_account_id", "reason"])
    op.drop_column("pair_restrictions", "lift_detail")
    op.drop_column("pair_restrictions", "lifted_at")
