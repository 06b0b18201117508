"""pace_buckets: the population's paces counted per bucket, kept as the paces change

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06

One row per (population row, bucket): the accounts of ``account_paces`` with 20 counted
think times or more whose pace (log_seconds / think_times) is in bucket
floor(pace / 0.05), split over the 32 rows of ``decision_population`` by the account id's
CRC-32, as the store keeps it. Consulting reads it rather than every account's pace. Filled
here from account_paces (the hash is Python's zlib.crc32, so the fill is done in Python).
See services/antiabuse/play_store.py. Written out here rather than read from that module.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

ROWS = 32  # decision_population's rows
STEP = 0.05  # a bucket: 5 % of a think time (natural log)
LEAST = 20  # counted think times before an account's pace counts
CHUNK = 10_000


def upgrade() -> None:
    table = op.create_table(
        "pace_buckets",
        sa.Column("row_id", sa.SmallInteger, primary_key=True),
        sa.Column("bucket", sa.Integer, primary_key=True),
        sa.Column("accounts", sa.Integer, nullable=False),
    )
    counts: Counter[tuple[int, int]] = Counter()
    paces = op.get_bind().execute(  # streamed: this statement only (not the connection)
        sa.text(
            "SELECT account_id, think_times, log_seconds FROM account_paces "
            "WHERE think_times >= :least"
        ),
        {"least": LEAST},
        execution_options={"stream_results": True, "yield_per": CHUNK},
    )
    for account_id, think_times, logs in paces:
        row = zlib.crc32(account_id.encode()) % ROWS + 1
        counts[row, math.floor(logs / think_times / STEP)] += 1
    rows = [{"row_id": r, "bucket": b, "accounts": n} for (r, b), n in sorted(counts.items())]
    for start in range(0, len(rows), CHUNK):
        op.bulk_insert(table, rows[start : start + CHUNK])


def downgrade() -> None:
    op.drop_table("pace_buckets")
