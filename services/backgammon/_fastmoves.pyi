"""Type stub of the C fast path (see _fastmoves.c)."""

from collections.abc import Sequence

def results(
    player: Sequence[int], opponent: Sequence[int], d1: int, d2: int, /
) -> tuple[str, ...]: ...
def plays(
    player: Sequence[int], opponent: Sequence[int], d1: int, d2: int, /
) -> tuple[bytes, ...]: ...
def count(player: Sequence[int], opponent: Sequence[int], d1: int, d2: int, /) -> int: ...
