"""Decisions graded as the analysis service grades them, without playing every game.

The held-out population (``heldout.py``) has thousands of sessions: playing each move
through the engine (about 20 ms a decision here) would take an hour. Instead the
engine ranks the legal plays of real positions once (:func:`record`: 0-ply self-play
from the starting position, every play's equity loss against the best, as
``Evaluator.best_moves`` gives them to the analysis), and a simulated decision is a
recorded position drawn at random with a player's *policy* applied to its ranking:
the error graded is the loss of the play the policy picks, as the analysis would grade
it. So the errors come from the engine's own ranking of real positions (their gaps,
their many near-equal plays), not from the distribution the assistance detector assumes
for a human (a zero-inflated exponential with sd 3 x mean): the evaluation does not
draw honest players from the detector's null model.

Each graded decision carries what the analysis publishes about the choice: the rank of
the play made in the engine's ranking (its index in the recorded ranking, plus one) and
the second- and third-best plays' losses; the assistance detector reads the shape of a
player's mistakes from them.

Policies: a person at temperature ``tau`` picks play *i* with probability proportional
to ``exp(-loss_i / tau)`` (``skill.choose``), ``tau`` set for a target PR by bisection on
the pool itself (:func:`tau_for`, exact: the softmax's expected loss over the pool); a
bot plays the best play, and the second best a share ``second_best`` of the time (noise
a bot adds so as not to look like an engine).
"""

from __future__ import annotations

import json
import math
import random
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from services.antiabuse.evaluation.skill import MONEY_MATCH_ID, Option, choose

KEPT = 24  # plays kept per position, best first: further ones carry no softmax weight


@dataclass(frozen=True)
class PositionPool:
    """Unforced positions' equity losses, best play first (0.0), and how often a turn
    was forced (one legal play or none)."""

    unforced: tuple[tuple[float, ...], ...]
    forced_share: float

    def draw(self, rng: random.Random) -> tuple[float, ...]:
        return self.unforced[rng.randrange(len(self.unforced))]


def record(positions: int, seed: int, tau: float = 0.0354) -> PositionPool:
    """``positions`` unforced positions of 0-ply self-play at ``tau`` (an advanced
    player's: the positions people reach), ranked by the analysis engine."""
    from services.analysis import worker
    from services.analysis.domain.engine import decode_trusted
    from services.backgammon.board import STARTING_BOARD

    rng = random.Random(seed)
    _, state = decode_trusted("4HPwATDgc/ABMA", MONEY_MATCH_ID)
    board, forced = STARTING_BOARD, 0
    unforced: list[tuple[float, ...]] = []
    while len(unforced) < positions:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        ranked = worker.engine().best_moves(board, state, dice, 0)
        if len(ranked) <= 1:
            forced += 1
        else:
            unforced.append(tuple(round(r.equity_loss, 5) for r in ranked[:KEPT]))
        if not ranked:
            board = board.swapped()
            continue
        options = [Option("", r.notation, r.equity_loss) for r in ranked]
        picked = choose(options, tau, rng)
        after = next(r.result for r in ranked if r.notation == picked.notation)
        board = STARTING_BOARD if after.is_over() else after.swapped()
    return PositionPool(tuple(unforced), forced / (forced + len(unforced)))


def cached(positions: int, seed: int) -> PositionPool:
    """:func:`record`, kept in the system temp dir (the engine's ranking of the same
    self-play is the same every time; recording 600 positions takes half a minute)."""
    path = Path(tempfile.gettempdir()) / f"tavla-position-pool-{positions}-{seed}.json"
    try:
        stored = json.loads(path.read_text())
        return PositionPool(tuple(tuple(p) for p in stored["unforced"]), stored["forced_share"])
    except (OSError, ValueError, KeyError):
        pool = record(positions, seed)
        path.write_text(json.dumps({"unforced": pool.unforced, "forced_share": pool.forced_share}))
        return pool


def person_choice(losses: Sequence[float], tau: float, rng: random.Random) -> int:
    """The index (0: the best) of the play a person of temperature ``tau`` picks."""
    if tau <= 0:
        return 0
    weights = [math.exp(-loss / tau) for loss in losses]
    return rng.choices(range(len(losses)), weights=weights)[0]


def person_error(losses: Sequence[float], tau: float, rng: random.Random) -> float:
    """The loss of the play a person of temperature ``tau`` picks."""
    return float(losses[person_choice(losses, tau, rng)])


def bot_choice(losses: Sequence[float], second_best: float, rng: random.Random) -> int:
    """The index of a noisy bot's play: the best (0), or the second best (1)
    ``second_best`` of the time."""
    return 1 if len(losses) > 1 and rng.random() < second_best else 0


def bot_error(losses: Sequence[float], second_best: float, rng: random.Random) -> float:
    """The loss of a noisy bot's play: the best, or the second best ``second_best`` of
    the time."""
    return float(losses[bot_choice(losses, second_best, rng)])


def rank_of(losses: Sequence[float], loss: float) -> int:
    """Where a play losing ``loss`` stands among ``losses`` (1: the best), as the analysis
    ranks it: after every play that loses less."""
    return 1 + sum(1 for other in losses if other < loss)


def expected_person_error(pool: PositionPool, tau: float) -> float:
    """The mean loss a person of ``tau`` makes over the pool (exact, no sampling)."""
    total = 0.0
    for losses in pool.unforced:
        weights = [math.exp(-loss / tau) for loss in losses]
        total += sum(w * loss for w, loss in zip(weights, losses, strict=True)) / sum(weights)
    return total / len(pool.unforced)


def expected_bot_error(pool: PositionPool, second_best: float) -> float:
    return second_best * sum(p[1] for p in pool.unforced) / len(pool.unforced)


def tau_for(pool: PositionPool, error: float) -> float:
    """The temperature whose expected loss over the pool is ``error`` (bisection)."""
    low, high = 1e-5, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        if expected_person_error(pool, middle) < error:
            low = middle
        else:
            high = middle
    return (low + high) / 2
