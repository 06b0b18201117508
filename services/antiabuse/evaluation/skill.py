"""How simulated players choose their plays: GNU Backgammon's net plus fitted noise.

Every play is chosen among the legal plays the analysis service's own engine ranks
(``Evaluator.best_moves`` at 0-ply, the code ``BestMoves`` runs; the gnubg module is
used directly, as ``tavla analysis match`` does, because ``BestMoves`` is internal to
the game and anti-abuse). A player picks play *i* with probability proportional to
``exp(-loss_i / tau)`` (a softmax over the equity lost against the best play):
``tau`` = 0 is the engine itself (a bot), larger is weaker.

The error rates are GNU Backgammon's rating scale (manual, "Overall rating"; the
thresholds of its ``analysis.c``): mean equity lost per unforced decision
below 0.002 supernatural, 0.005 world class, 0.008 expert, 0.012 advanced, 0.018
intermediate, 0.026 casual, 0.035 beginner. An online money site's honest players
are taken as advanced to beginner: :data:`TIERS` are the middles of those four
bands. ``tau`` for each was fitted by :func:`calibrate` (bisection on 0-ply
self-play, 400 unforced decisions, seed 7): ``python -m
services.antiabuse.evaluation.skill`` prints the fit again; :data:`TAUS` are its
figures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

# tier -> target mean equity lost per unforced decision (middle of gnubg's band)
TIERS: dict[str, float] = {
    "advanced": 0.010,
    "intermediate": 0.015,
    "casual": 0.022,
    "beginner": 0.0305,
}
# tier -> fitted softmax temperature (see the module docstring; refit with __main__)
TAUS: dict[str, float] = {
    "advanced": 0.0354,
    "intermediate": 0.0462,
    "casual": 0.0645,
    "beginner": 0.0812,
}
MONEY_MATCH_ID = "cAgAAAAAAAAA"  # a money session, centred cube, no score


@dataclass(frozen=True)
class Option:
    """One legal play as the player sees it: its result and its equity loss."""

    result_position_id: str
    notation: str
    equity_loss: float


def choose(options: Sequence[Option], tau: float, rng: random.Random) -> Option:
    """The play a player of temperature ``tau`` makes (0: the best, always)."""
    if tau <= 0 or len(options) == 1:
        return min(options, key=lambda o: o.equity_loss)
    weights = [math.exp(-o.equity_loss / tau) for o in options]
    return rng.choices(list(options), weights=weights)[0]


def worst(options: Sequence[Option]) -> Option:
    """What a player losing on purpose plays."""
    return max(options, key=lambda o: o.equity_loss)


def ranked_options(position_id: str, match_id: str, dice: tuple[int, int]) -> list[Option]:
    """The analysis engine's ranking of every legal play (0-ply), as options."""
    from services.analysis import worker
    from services.backgammon import position_id as pid

    return [
        Option(pid.encode(r.result), r.notation, r.equity_loss)
        for r in worker.best_moves(position_id, match_id, dice, 0)
    ]


def cube_action(position_id: str, match_id: str) -> str:
    """The net's 0-ply cube action for the player on roll: no_double, double_take,
    double_pass or too_good (``CubeAction`` values)."""
    from services.analysis import worker

    return str(worker.evaluate(position_id, match_id, 0).cube_action.value)


def cubeful_equity(position_id: str, match_id: str) -> float:
    """The net's 0-ply cubeful equity of the player on roll, per unit of cube."""
    from services.analysis import worker

    return float(worker.evaluate(position_id, match_id, 0).cubeful_equity)


def mean_error(tau: float, decisions: int, seed: int) -> float:
    """Mean equity lost per unforced decision by self-play at ``tau`` (0-ply)."""
    from services.analysis import worker
    from services.analysis.domain.engine import decode_trusted
    from services.backgammon.board import STARTING_BOARD

    rng = random.Random(seed)
    _, state = decode_trusted("4HPwATDgc/ABMA", MONEY_MATCH_ID)
    board, lost, counted = STARTING_BOARD, 0.0, 0
    while counted < decisions:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        ranked = worker.engine().best_moves(board, state, dice, 0)
        if not ranked:
            board = board.swapped()
            continue
        options = [Option("", r.notation, r.equity_loss) for r in ranked]
        picked = choose(options, tau, rng)
        if len(ranked) > 1:
            lost, counted = lost + picked.equity_loss, counted + 1
        after = next(r.result for r in ranked if r.notation == picked.notation)
        board = STARTING_BOARD if after.is_over() else after.swapped()
    return lost / counted


def calibrate(target: float, decisions: int = 400, seed: int = 7) -> float:
    """The temperature whose self-play loses ``target`` per unforced decision."""
    low, high = 0.0, 0.2
    for _ in range(14):
        middle = (low + high) / 2
        if mean_error(middle, decisions, seed) < target:
            low = middle
        else:
            high = middle
    return round((low + high) / 2, 4)


if __name__ == "__main__":
    for tier, target in TIERS.items():
        tau = calibrate(target)
        print(f"{tier}: target {target} -> tau {tau} (check: {mean_error(tau, 400, 8):.4f})")
