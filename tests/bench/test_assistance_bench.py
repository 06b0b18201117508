"""The assistance detector on a simulated population (`make bench`), fresh seeds each run.

Honest players from PR 2.5 to PR 10 (human-like errors and think times) over 600
decisions each, judged after every 60 as the service judges after every session, and
engine-perfect bots with uniform think times over 120 decisions (about one 5- to 7-point
match). Prints one JSON line: the seed, precision, recall and false-positive rate on
accounts. The issue's goal (recall >= 0.9 at a false-positive rate <= 1%) is asserted:
the figures are pure computation, the same on any machine for a given seed.
"""

from __future__ import annotations

import json
import random
import time

from services.antiabuse.domain import assistance
from tests.support.assistance_population import flagged_at_some_look, honest_player, uniform_bot

HONEST = 400
BOTS = 100


def test_assistance_precision_and_recall_on_a_fresh_population() -> None:
    seed = time.time_ns() % 2**32
    rng = random.Random(seed)
    flagged_honest = sum(
        flagged_at_some_look(honest_player(rng, 0.005 + 0.015 * rng.random(), 600))
        for _ in range(HONEST)
    )
    caught = sum(assistance.assess("b", uniform_bot(rng, 120)) is not None for _ in range(BOTS))
    flagged = flagged_honest + caught
    figures = {
        "seed": seed,
        "assistance": {
            "precision": caught / flagged if flagged else 1.0,
            "recall": caught / BOTS,
            "false_positive_rate": flagged_honest / HONEST,
        },
    }
    print(json.dumps(figures))
    assert figures["assistance"]["recall"] >= 0.9
    assert figures["assistance"]["false_positive_rate"] <= 0.01
