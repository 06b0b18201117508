"""Migration 0009 finds alerts raised before it by detector and subjects: each existing
alert gets the ``subject_key`` the alert path computes for a finding of the same detector
and subjects (subjects in code-point order, whatever the database's collation), its
``updated_at`` is its ``raised_at``, and the fingerprint may repeat after it (re-armed
alerts share one). Downgrading restores the unique fingerprint."""

from __future__ import annotations

from typing import Any

import asyncpg  # type: ignore[import-untyped]
import pytest

from services.antiabuse.alerting import subject_key
from services.antiabuse.domain.findings import Detector, Finding, Severity
from tests.support.services import migrate_step, new_database

# Upper and lower case, and a digit: a collation other than "C" would order them otherwise.
SUBJECTS = ("B-2", "a-1", "b-3")
_ALERT = """
INSERT INTO alerts (alert_id, fingerprint, detector, kind, severity, status, raised_at, message)
    VALUES ('old', 'f', 'chip_dumping', 2, 2, 1, '2026-11-01T10:00:00Z', '\\x');
INSERT INTO alert_subjects VALUES ('old', 'b-3'), ('old', 'B-2'), ('old', 'a-1');
"""


async def test_existing_alerts_are_found_by_detector_and_subjects(postgres_server: Any) -> None:
    name = new_database(postgres_server, "antiabuse_episodes")
    url = postgres_server.url(name)
    await migrate_step("antiabuse", url, "up", "0008")
    connection = await asyncpg.connect(postgres_server.dsn(name))
    try:
        await connection.execute(_ALERT)
        await migrate_step("antiabuse", url, "up", "0009")
        row = await connection.fetchrow(
            "SELECT subject_key, updated_at = raised_at AS same, evidence_digest FROM alerts")
        finding = Finding(Detector.CHIP_DUMPING, tuple(sorted(SUBJECTS)), Severity.MEDIUM, 1.0,
                          "share", ())
        assert row["subject_key"] == subject_key(finding)
        assert row["same"] and row["evidence_digest"] == ""
        await connection.execute(  # a re-armed alert shares its predecessor's fingerprint
            "INSERT INTO alerts (alert_id, fingerprint, detector, kind, severity, status, "
            "raised_at, updated_at, message) VALUES "
            "('new', 'f', 'chip_dumping', 2, 2, 1, now(), now(), '\\x')")
        await connection.execute("DELETE FROM alerts WHERE alert_id = 'new'")

        await migrate_step("antiabuse", url, "down", "0008")
        with pytest.raises(asyncpg.UniqueViolationError):
            await connection.execute(
                "INSERT INTO alerts (alert_id, fingerprint, detector, kind, severity, status, "
                "raised_at, message) VALUES ('dup', 'f', 'chip_dumping', 2, 2, 1, now(), '\\x')")
    finally:
        await connection.close()
