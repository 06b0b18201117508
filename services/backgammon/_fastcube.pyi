"""Type stub of the C fast path of a money-game evaluation (see _fastcube.c)."""

from collections.abc import Callable, Sequence

def money(
    net: Callable[[Sequence[Sequence[int]], int], Sequence[float]],
    board: Sequence[Sequence[int]],
    plies: int,
    access: int,
    jacoby: bool,
    /,
) -> tuple[tuple[float, float, float, float, float], float, float, float, float, int] | None: ...
