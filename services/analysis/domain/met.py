"""The Kazaross-XG2 match equity table (MET), shipped as data in ``data/Kazaross-XG2.xml``.

``winning_chance(away, opponent_away, post_crawford=)`` is the chance that a player
needing ``away`` points wins the match against one needing ``opponent_away``, before
the next game starts. Scores at or past the length are decided (1 or 0). The
Crawford game itself uses the pre-Crawford table (row/column 1-away), as GNU
Backgammon does; post-Crawford games with one side 1-away use the post-Crawford row.
The table covers matches up to 25 points; longer distances are clamped to 25.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MET_FILE = Path(__file__).resolve().parent.parent / "data" / "Kazaross-XG2.xml"


@dataclass(frozen=True, slots=True)
class MatchEquityTable:
    """``pre[i][j]``: chance to win needing i+1 against j+1; ``post[j]``: the trailer
    needing j+1 against the leader at 1-away, post-Crawford."""

    name: str
    pre: tuple[tuple[float, ...], ...]
    post: tuple[float, ...]

    @property
    def length(self) -> int:
        return len(self.pre)

    def winning_chance(
        self, away: int, opponent_away: int, *, post_crawford: bool = False
    ) -> float:
        if away <= 0:
            return 1.0
        if opponent_away <= 0:
            return 0.0
        away, opponent_away = min(away, self.length), min(opponent_away, self.length)
        if post_crawford and opponent_away == 1 and away > 1:
            return self.post[away - 1]
        if post_crawford and away == 1 and opponent_away > 1:
            return 1.0 - self.post[opponent_away - 1]
        return self.pre[away - 1][opponent_away - 1]


def _row(element: ElementTree.Element) -> tuple[float, ...]:
    return tuple(float(me.text or "") for me in element.iter("me"))


def parse(text: str) -> MatchEquityTable:
    """A GNU Backgammon MET XML file with explicit pre- and post-Crawford tables."""
    root = ElementTree.fromstring(text)
    name = root.findtext("info/name") or "unnamed"
    pre_table = root.find("pre-crawford-table")
    post_table = root.find("post-crawford-table/row")
    if pre_table is None or post_table is None:
        raise ValueError("the MET file needs explicit pre- and post-Crawford tables")
    pre = tuple(_row(row) for row in pre_table.iter("row"))
    if any(len(row) != len(pre) for row in pre):
        raise ValueError("the pre-Crawford table is not square")
    return MatchEquityTable(name, pre, _row(post_table))


@lru_cache(maxsize=1)
def kazaross_xg2() -> MatchEquityTable:
    """The shipped table (parsed once per process)."""
    # The DOCTYPE names an external DTD that ElementTree never fetches; the file is ours.
    return parse(MET_FILE.read_text(encoding="utf-8"))
