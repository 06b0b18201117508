"""GNU Backgammon move notation: print plays as gnubg does (``13/7* 8/7``) and parse them back.

Points are numbered from the mover's side: 25 is the bar (``bar``), 0 is off
(``off``). A step is one die's movement of one checker: ``(from_point, to_point)``.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from services.backgammon.board import Board
from services.backgammon.errors import InvalidNotation

Step = tuple[int, int]

BAR_POINT = 25
OFF_POINT = 0


def _point_text(point: int) -> str:
    if point == BAR_POINT:
        return "bar"
    if point == OFF_POINT:
        return "off"
    return str(point)


def _opponent_blot_on(board: Board, point: int) -> bool:
    return 1 <= point <= 24 and board.opponent[24 - point] > 0


def _chains(board: Board, steps: Sequence[Step]) -> list[list[int]]:
    """Sort steps by source (then destination) descending and join a checker's steps.

    Like gnubg, an intermediate point stays in the chain only when a blot was hit there.
    """
    rows = sorted(steps, key=lambda s: (s[0], s[1]), reverse=True)
    chains: list[list[int] | None] = [list(row) for row in rows]
    for i, chain in enumerate(chains):
        for j in range(i, len(chains)):
            other = chains[j]
            if chain is None or other is None or chain[-1] != other[0]:
                continue
            if _opponent_blot_on(board, chain[-1]):
                chain.append(other[1])
            else:
                chain[-1] = other[1]
            chains[j] = None
    return [c for c in chains if c is not None]


def _count_repeats(chains: list[list[int]]) -> list[tuple[list[int], int]]:
    grouped: list[tuple[list[int], int]] = []
    for chain in chains:
        for k, (seen, count) in enumerate(grouped):
            if seen == chain:
                grouped[k] = (seen, count + 1)
                break
        else:
            grouped.append((chain, 1))
    return grouped


def format_play(board: Board, steps: Sequence[Step]) -> str:
    """The gnubg text of ``steps`` played from ``board`` (the position before the play)."""
    marked: set[int] = set()
    parts: list[str] = []
    for chain, count in _count_repeats(_chains(board, steps)):
        text = _point_text(chain[0])
        for point in chain[1:-1]:
            text += f"/{_point_text(point)}*"
            marked.add(point)
        last = chain[-1]
        text += f"/{_point_text(last)}"
        if _opponent_blot_on(board, last) and last not in marked:
            text += "*"
            marked.add(last)
        if count > 1:
            text += f"({count})"
        parts.append(text)
    return " ".join(parts)


_TOKEN = re.compile(
    r"^(?P<path>(?:bar|off|\d{1,2})\*?(?:/(?:bar|off|\d{1,2})\*?)+)(?:\((?P<n>[1-4])\))?$"
)


def _parse_point(text: str) -> int:
    text = text.rstrip("*")
    if text == "bar":
        return BAR_POINT
    if text == "off":
        return OFF_POINT
    point = int(text)
    if not 1 <= point <= 24:
        raise InvalidNotation(f"point {point} is outside 1..24 (use 'bar' or 'off')")
    return point


def parse_moves(text: str) -> list[tuple[int, int]]:
    """Checker movements named by ``text``, e.g. ``"13/7* 8/7"`` -> ``[(13, 7), (8, 7)]``.

    Each entry is a start and end point of one checker's movement, repeated for
    ``(n)``; a chain ``24/18*/13`` gives ``(24, 18), (18, 13)``. The entries are not
    split into single-die steps: :func:`services.backgammon.movegen.find_play` matches
    them against the legal plays.
    """
    moves: list[tuple[int, int]] = []
    tokens = text.lower().replace(",", " ").split()
    if not tokens:
        raise InvalidNotation("empty move text")
    for token in tokens:
        match = _TOKEN.match(token)
        if match is None:
            raise InvalidNotation(f"{token!r} is not like '13/7', '13/7*', 'bar/22' or '6/off(2)'")
        points = [_parse_point(p) for p in match.group("path").split("/")]
        repeat = int(match.group("n") or 1)
        for _ in range(repeat):
            for start, end in itertools.pairwise(points):
                if end >= start:
                    raise InvalidNotation(
                        f"{token!r} moves backwards: checkers move to lower points"
                    )
                moves.append((start, end))
    return moves
