"""Chat moderation measured on a labelled set it was not written from.

``tests/data/chat_moderation_labelled.csv`` holds 210 table-chat messages, labelled by
hand and committed before moderation learned to undo disguises: 105 offensive (insults
and swear words disguised with digits, symbols, spacing, dots, stretched letters, stars
and look-alike letters of other scripts, and links written out), 105 innocent (ordinary
table talk, and tricky messages: "Scunthorpe", "assess", "therapist", "cocked dice",
spaced "g g", stretched "nooooo", numbers, "e.g.", "market loser"). The set is not
edited to suit the filter. The test prints precision, recall and the false-refusal rate
(``pytest -s``) and holds moderation to recall >= 0.9 on the offensive half and at most
2% of the innocent half refused.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from services.game.moderation import blocked_reasons

LABELLED = Path(__file__).parents[2] / "data" / "chat_moderation_labelled.csv"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Labelled:
    label: str
    kind: str
    text: str


def labelled() -> list[Labelled]:
    with LABELLED.open(encoding="utf-8", newline="") as file:
        return [Labelled(row["label"], row["kind"], row["text"]) for row in csv.DictReader(file)]


def test_the_labelled_set_is_two_halves_of_at_least_a_hundred() -> None:
    rows = labelled()
    offensive = [r for r in rows if r.label == "offensive"]
    innocent = [r for r in rows if r.label == "innocent"]
    assert len(rows) >= 200 and len(offensive) + len(innocent) == len(rows)
    assert len(offensive) >= 100 and len(innocent) >= 100
    assert len({r.text for r in rows}) == len(rows)  # no message counted twice


def test_moderation_catches_disguises_and_lets_table_talk_through() -> None:
    rows = labelled()
    refused = {r.text for r in rows if blocked_reasons(r.text, [], NOW)}
    offensive = [r for r in rows if r.label == "offensive"]
    innocent = [r for r in rows if r.label == "innocent"]
    caught = [r for r in offensive if r.text in refused]
    missed = [r for r in offensive if r.text not in refused]
    wrongly = [r for r in innocent if r.text in refused]
    recall = len(caught) / len(offensive)
    false_refusals = len(wrongly) / len(innocent)
    precision = len(caught) / (len(caught) + len(wrongly))
    by_kind = {
        kind: f"{sum(r.text in refused for r in offensive if r.kind == kind)}"
        f"/{sum(r.kind == kind for r in offensive)}"
        for kind in sorted({r.kind for r in offensive})
    }
    print(
        f"\nchat moderation on {len(rows)} labelled messages: precision {precision:.3f}, "
        f"recall {recall:.3f} ({len(caught)}/{len(offensive)}; {by_kind}), "
        f"false refusals {false_refusals:.3f} ({len(wrongly)}/{len(innocent)})"
    )
    print(f"missed: {[r.text for r in missed]}")
    print(f"refused though innocent: {[r.text for r in wrongly]}")
    assert recall >= 0.9, [r.text for r in missed]
    assert false_refusals <= 0.02, [r.text for r in wrongly]
