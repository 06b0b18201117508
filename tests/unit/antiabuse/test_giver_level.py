"""Chip dumping's null at the skill gap: the giver's level from their games against others
(wins and losses), from all their games when those are too few, thrown losses left out,
never weaker than a beginner's (0.035 a decision).

Every expected figure is worked out by hand in the comment beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import chip_dumping, dumping_play
from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.play import PlayedGame

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def game(n: int, opponent: str, won: bool, epd: float, decisions: int = 25) -> PlayedGame:
    return PlayedGame(
        f"g{n}", "w", opponent, won, epd, decisions, 0.0, 0.0, T0 + timedelta(hours=n)
    )


def strangers(*epds: float, won: bool = False) -> list[PlayedGame]:
    return [game(100 + i, f"x{i}", won, epd) for i, epd in enumerate(epds)]


def test_a_weak_players_level_counts_their_losses_to_others() -> None:
    # One win at 0.012 and two losses at 0.030 and 0.026 against strangers: no level from
    # wins (1 of the 3 needed); the median of the three, 0.026, is the giver's.
    lost = [game(101, "x1", False, 0.030), game(102, "x2", False, 0.026)]
    games = [*strangers(0.012, won=True), *lost]
    assert dumping_play.giver_level(games, "s") == pytest.approx(0.026)


def test_games_against_others_are_preferred_to_the_pairs() -> None:
    # Three games against strangers (0.010, 0.012, 0.014: median 0.012) and five losses
    # to the receiver at 0.030: the receiver's games do not count when others suffice.
    games = strangers(0.010, 0.012, 0.014) + [game(i, "s", False, 0.030) for i in range(5)]
    assert dumping_play.giver_level(games, "s") == pytest.approx(0.012)


def test_without_enough_games_against_others_all_the_games_count_but_thrown_ones() -> None:
    # No stranger; losses to the receiver at 0.20, 0.15, 0.09 (each >= 0.0875, 2.5 x a
    # beginner's 0.035: thrown) and 0.03, 0.02: two counted, fewer than 3: no level.
    pair = [game(i, "s", False, e) for i, e in enumerate((0.20, 0.15, 0.09, 0.03, 0.02))]
    assert dumping_play.giver_level(pair, "s") is None
    # A third real loss at 0.04: median of 0.02, 0.03, 0.04 is 0.03.
    assert dumping_play.giver_level([*pair, game(5, "s", False, 0.04)], "s") == pytest.approx(
        0.03
    )


def test_short_games_do_not_measure_a_level() -> None:
    # Three games of 9 decisions (under the 10 a level needs): nothing measured.
    games = [game(100 + i, f"x{i}", False, 0.02, decisions=9) for i in range(3)]
    assert dumping_play.giver_level(games, "s") is None


def test_looking_weak_buys_no_more_than_a_beginners_level() -> None:
    # Losses to others at 0.05, 0.06, 0.07 (PR 30: under 0.0875, so not thrown): their
    # median 0.06 is capped at a beginner's 0.035.
    assert dumping_play.giver_level(strangers(0.05, 0.06, 0.07), "s") == pytest.approx(0.035)


def test_a_weak_friends_losses_to_a_strong_friend_are_judged_at_the_gap() -> None:
    # The held-out case: the weaker losing 21 of 24. As a coin, P(X >= 21 | 24, 0.5) =
    # (C(24,21) + C(24,22) + C(24,23) + 1) / 2^24 = (2024 + 276 + 24 + 1) / 16777216
    # = 1.386e-4: under 0.001, a finding (MEDIUM).
    moved = [
        chip_dumping.Transfer(
            f"t{i}", f"g{i}", *(("s", "w") if i < 3 else ("w", "s")), 500, "USD",
            T0 + timedelta(hours=i),
        )
        for i in range(24)
    ]  # fmt: skip
    now = T0 + timedelta(hours=25)
    coin = chip_dumping.Strengths(None, 0.009, 22)
    found = chip_dumping.assess(moved, now, strengths=coin)
    assert found is not None and found.severity is Severity.MEDIUM
    # The giver's level from others capped at 0.035, the receiver's 0.009, 22 decisions a
    # game: the receiver wins with 0.5 + 22 x 0.026 / 2 = 0.786, and P(X >= 21 | 24, 0.786)
    # is well above 0.001 (at 0.7 alone it is 0.0424): no finding.
    gap = chip_dumping.Strengths(0.035, 0.009, 22)
    assert gap.receiver_win_chance(chip_dumping.DEFAULT_POLICY) == pytest.approx(0.786)
    assert chip_dumping.assess(moved, now, strengths=gap) is None
