"""A simulated population for the assistance detector: honest players of a given level with
human-like think times, engine-perfect bots with uniform think times, and the detector run
after every session as the service runs it. Used by the unit test (fixed seed) and the bench
(fresh seeds).
"""

from __future__ import annotations

import math
import random

from services.antiabuse.domain import assistance
from services.antiabuse.domain.assistance import Move


def honest_player(rng: random.Random, level: float, n: int) -> list[Move]:
    """A human-like player: 60% of decisions perfect, the rest exponential errors with mean
    ``level`` / 0.4 (so the mean error is ``level``); log-normal think times (sd 0.8), forced
    plays about half as long, cube actions 1.5 times as long."""
    moves: list[Move] = []
    for i in range(n):
        game = f"g{i // 60}"
        error = 0.0 if rng.random() < 0.6 else rng.expovariate(0.4 / level)
        think = math.exp(rng.gauss(1.5, 0.8))
        roll = rng.random()
        if roll < 0.1:
            moves.append(Move(game, 1, "checker", False, 0.0, think * 0.5))
        elif roll < 0.15:
            moves.append(
                Move(game, 1, rng.choice(["take", "pass", "double"]), True, error, think * 1.5)
            )
        else:
            moves.append(Move(game, 1, "checker", True, error, think))
    return moves


def uniform_bot(rng: random.Random, n: int) -> list[Move]:
    """An engine-perfect bot with think times uniform in [2, 6] seconds, forced or not."""
    moves: list[Move] = []
    for i in range(n):
        game = f"g{i // 60}"
        roll = rng.random()
        kind, counted = ("checker", False) if roll < 0.1 else ("checker", True)
        if 0.1 <= roll < 0.15:
            kind = "take"
        moves.append(Move(game, 1, kind, counted, 0.0, rng.uniform(2.0, 6.0)))
    return moves


def flagged_at_some_look(moves: list[Move], step: int = 60) -> bool:
    """Judged after every session (each ``step`` decisions), as the detector is run."""
    return any(
        assistance.assess("p", moves[:end]) is not None for end in range(step, len(moves) + 1, step)
    )
