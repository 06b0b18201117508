"""Type stub of the C fast path of the engine's money evaluation (see _fastcube.c)."""

from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

def configure(
    chances: type[tuple[Any, ...]], evaluation: type[tuple[Any, ...]], actions: tuple[Enum, ...], /
) -> None: ...
def money(
    net: Callable[[Sequence[Sequence[int]], int], Sequence[float]],
    board: Sequence[Sequence[int]] | str,
    plies: int,
    access: int,
    jacoby: bool,
    /,
) -> Any: ...
def money_many(
    net: Callable[[Sequence[Sequence[int]], int], Sequence[float]],
    boards: Sequence[Sequence[Sequence[int]]],
    plies: int,
    access: int,
    jacoby: bool,
    /,
) -> Any: ...
def exact(
    chances: tuple[float, float, float, float, float],
    efficiency: float,
    plies: int,
    access: int,
    jacoby: bool,
    /,
) -> Any: ...
