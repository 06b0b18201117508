"""The shipped Kazaross-XG2 table is the one GNU Backgammon uses by default.

The expected values come from the ``gnubg`` program (``gnubg.met()``: its pre-Crawford
table and post-Crawford rows, loaded from its own installed copy of the table), and a
few published entries are checked by hand from the table as printed in gnubg's source.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from services.analysis.domain.met import kazaross_xg2, parse
from tests.unit.analysis.test_engine_gnubg import gnubg_binary

SCRIPT = """
import json
import gnubg
json.dump(gnubg.met(), open(TARGET, "w"))
"""


def test_every_entry_matches_gnubg_default_met(tmp_path: Path) -> None:
    script, target = tmp_path / "met.py", tmp_path / "met.json"
    script.write_text(SCRIPT.replace("TARGET", repr(str(target))))
    subprocess.run(
        [gnubg_binary(), "-t", "-q", "-p", str(script)],
        check=True,
        timeout=120,
        capture_output=True,
    )
    pre, post, _ = json.loads(target.read_text())
    met = kazaross_xg2()
    assert met.length == 25
    for away in range(1, 26):
        for other in range(1, 26):
            assert met.winning_chance(away, other) == pytest.approx(
                pre[away - 1][other - 1], abs=1e-6
            )
        if (
            1 < away < 25
        ):  # gnubg recomputes the 25-away post-Crawford entry (0.001181, file 0.00123)
            trailer = met.winning_chance(away, 1, post_crawford=True)
            assert trailer == pytest.approx(post[away - 1], abs=1e-6)
            assert met.winning_chance(1, away, post_crawford=True) == pytest.approx(
                1 - post[away - 1], abs=1e-6
            )


def test_published_entries_and_decided_scores() -> None:
    met = kazaross_xg2()
    assert met.winning_chance(1, 2) == 0.67736  # Crawford game, 1-away 2-away
    assert met.winning_chance(2, 1, post_crawford=True) == 0.48803  # the free drop
    assert met.winning_chance(7, 7) == 0.5
    assert met.winning_chance(0, 3) == 1.0 and met.winning_chance(3, -1) == 0.0
    assert met.winning_chance(40, 40) == 0.5  # beyond 25 points: clamped


def test_a_table_without_post_crawford_figures_is_refused() -> None:
    with pytest.raises(ValueError, match="post-Crawford"):
        parse("<met><pre-crawford-table><row><me>0.5</me></row></pre-crawford-table></met>")
