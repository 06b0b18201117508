"""Consulting's pre-check from counts alone (:func:`consulting_play.within_reach`): a pair
it turns away is one :func:`consulting_play.assess` finds nothing in, so the consumer may
skip reading its decisions without losing a finding.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

from services.antiabuse.domain import consulting_play
from services.antiabuse.domain.consulting_play import GameKey, Played, Window

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def window(game: str, start_min: int, end_min: int) -> Window:
    return Window(game, 1, T0 + timedelta(minutes=start_min), T0 + timedelta(minutes=end_min))


def plays(game: str, errors: list[float], counted: bool = True) -> list[Played]:
    return [Played(game, 1, counted, e, 5.0) for e in errors]


def counts(played: list[Played]) -> dict[GameKey, int]:
    return dict(Counter((p.game_id, p.game_number) for p in played if p.counted))


HELPED = [window("base", 0, 10), window("over", 20, 30), window("vs", 40, 50)]
HELPER = [window("busy", 15, 35), window("vs", 40, 50)]


def test_the_z_tests_minimums_decide_and_games_against_each_other_do_not_count() -> None:
    # 30 overlapping zeros against 60 baseline decisions alternating 0 and 0.04: z = 4.43
    # (test_consulting_play's worked example), a finding; one overlapping decision less,
    # none. 40 decisions of the game the two played each other are no baseline, and 40
    # uncounted (forced) ones none either.
    found = plays("base", [0.0, 0.04] * 30) + plays("over", [0.0] * 30)
    short = plays("base", [0.0, 0.04] * 30) + plays("over", [0.0] * 29)
    against = plays("base", [0.0, 0.04] * 10) + plays("vs", [0.04] * 40) + plays("over", [0.0] * 30)
    forced = against[:20] + plays("base", [0.04] * 40, counted=False) + against[60:]
    assert consulting_play.within_reach(HELPED, counts(found), HELPER)
    assert consulting_play.assess("a", "b", HELPED, found, HELPER, []) is not None
    for played in (short, against, forced):
        assert not consulting_play.within_reach(HELPED, counts(played), HELPER)
        assert consulting_play.assess("a", "b", HELPED, played, HELPER, []) is None


def test_one_persons_test_reaches_further_only_for_one_person() -> None:
    played = plays("base", [0.04] * 20) + plays("over", [0.0] * 20)  # 20 and 20
    assert not consulting_play.within_reach(HELPED, counts(played), HELPER, one_person=False)
    assert consulting_play.within_reach(HELPED, counts(played), HELPER, one_person=True)
    assert not consulting_play.within_reach(HELPED, counts(played[1:]), HELPER, one_person=True)


def test_a_pair_turned_away_is_never_one_assess_finds_anything_in() -> None:
    rng = random.Random(1710421)  # a tuning seed of the range the project keeps for them
    turned_away = found_beside = 0
    for _ in range(600):
        helped = [window(f"h{i}", 10 * i, 10 * i + rng.randint(3, 14)) for i in range(6)]
        helper = [window(f"o{i}", rng.randint(0, 60), 0) for i in range(3)]
        helper = [Window(w.game_id, 1, w.started_at, w.started_at + timedelta(minutes=8))
                  for w in helper]
        if rng.random() < 0.3:
            helped.append(window("vs", 70, 80))
            helper.append(window("vs", 70, 80))
        helped_play = [
            Played(w.game_id, 1, rng.random() < 0.8, rng.choice([0.0, 0.0, 0.02, 0.1]), 5.0)
            for w in helped
            for _ in range(rng.randint(0, 30))
        ]
        helper_play = [Played(w.game_id, 1, True, 0.01, rng.uniform(2, 20))
                       for w in helper for _ in range(15)]
        for one in (False, True):
            seen = counts(helped_play)
            reach = consulting_play.within_reach(helped, seen, helper, one_person=one)
            finding = consulting_play.assess(
                "a", "b", helped, helped_play, helper, helper_play, one_person=one
            )
            if not reach:
                turned_away += 1
                assert finding is None
            elif finding is not None:
                found_beside += 1
    # The worlds exercised both sides: pairs turned away and pairs found.
    assert turned_away > 100 and found_beside > 0
