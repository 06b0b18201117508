"""alert episodes and four-eyes: alerts found by detector and subjects (not severity),
their history, and sanctions that wait for a second officer

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05

An alert is no longer unique per fingerprint (detector, subjects, severity): a
dismissed alert re-arms, so the same fingerprint may name several alerts over time.
``subject_key`` (detector and subjects) finds the latest; ``evidence_digest`` and
``updated_at`` say what it last held and when. Written out here rather than read
from the tables modules.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

ID = 64


def upgrade() -> None:
    op.drop_constraint("alerts_fingerprint_key", "alerts", type_="unique")
    op.add_column("alerts", sa.Column("subject_key", sa.String(64), nullable=False,
                                      server_default=""))
    op.add_column("alerts", sa.Column("evidence_digest", sa.String(64), nullable=False,
                                      server_default=""))
    op.add_column("alerts", sa.Column("updated_at", sa.DateTime(timezone=True)))
    # The key as alert_lifecycle.subject_key spells it: sha256 of "detector|a,b,..." with
    # the subjects in code-point order (COLLATE "C").
    op.execute(
        """
        UPDATE alerts SET updated_at = raised_at,
          subject_key = encode(sha256(convert_to(detector || '|' || (
            SELECT string_agg(s.account_id, ',' ORDER BY s.account_id COLLATE "C")
            FROM alert_subjects s WHERE s.alert_id = alerts.alert_id), 'UTF8')), 'hex')
        """
    )
    op.alter_column("alerts", "updated_at", nullable=False)
    op.create_index("alerts_by_subject_key", "alerts", ["subject_key", "raised_at"])
    op.create_table(
        "alert_history",
        sa.Column("alert_id", sa.String(ID), primary_key=True),
        sa.Column("sequence", sa.Integer, primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        # The AlertRevision message (tavla.antiabuse.v1), as GetAlert answers it.
        sa.Column("message", sa.LargeBinary, nullable=False),
    )
    op.add_column("case_sanctions", sa.Column("state", sa.String(12), nullable=False,
                                              server_default="imposed"))
    op.add_column("case_sanctions", sa.Column("proposed_by", sa.String(ID), nullable=False,
                                              server_default=""))
    op.add_column("case_sanctions", sa.Column("approved_by", sa.String(ID), nullable=False,
                                              server_default=""))
    op.add_column("cases", sa.Column("proposal_note", sa.Text, nullable=False,
                                     server_default=""))


def downgrade() -> None:
    op.drop_column("cases", "proposal_note")
    op.drop_column("case_sanctions", "approved_by")
    op.drop_column("case_sanctions", "proposed_by")
    op.drop_column("case_sanctions", "state")
    op.drop_table("alert_history")
    op.drop_index("alerts_by_subject_key", "alerts")
    op.drop_column("alerts", "updated_at")
    op.drop_column("alerts", "evidence_digest")
    op.drop_column("alerts", "subject_key")
    op.create_unique_constraint("alerts_fingerprint_key", "alerts", ["fingerprint"])
