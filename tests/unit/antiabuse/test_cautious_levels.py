"""A player's level where it is noisy or missing: judged alone no better than a beginner's
(0.035 a decision, so a thrown loss is at least 0.0875), and a win trader without a level
judged against a beginner's in the pair's losses to each other.

Every expected figure is worked out by hand in the comment beside it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from services.antiabuse.domain import chip_dumping, dumping_play
from services.antiabuse.domain import rating_manipulation as rm
from services.antiabuse.domain.findings import Severity
from services.antiabuse.domain.play import PlayedGame, cautious_level, level_or_floor
from services.antiabuse.domain.rating_manipulation import Result

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def game(n: int, who: str, opponent: str, won: bool, epd: float, decisions: int = 25) -> PlayedGame:
    return PlayedGame(
        f"g{n}", who, opponent, won, epd, decisions, 0.0, 0.0, T0 + timedelta(hours=n)
    )


def wins(who: str, *epds: float) -> list[PlayedGame]:
    """Wins against strangers (games 100 and up, so they never collide with a pair's)."""
    return [game(100 + i, who, f"x{i}", True, epd) for i, epd in enumerate(epds)]


def test_the_cautious_level_is_a_beginners_when_the_players_own_is_better() -> None:
    assert cautious_level(0.0091) == 0.035
    assert cautious_level(0.04) == 0.04
    assert level_or_floor(wins("p", 0.01, 0.02)) == 0.035  # two wins: no level of their own
    assert level_or_floor(wins("p", 0.01, 0.02, 0.03)) == pytest.approx(0.02)


def test_ordinary_bad_days_after_three_clean_wins_are_not_thrown_losses() -> None:
    # A weak player whose 3 wins were clean: 0.0119, 0.0091, 0.0091, level (median) 0.0091.
    # Losses at 0.0074, 0.0807, 0.0730, 0.0544. Against 0.0091 alone the line would be
    # max(2.5 x 0.0091, 0.0091 + 0.04) = 0.0491, three of four far below it:
    # P(X >= 3 | 4, 0.1) = 4 x 0.001 x 0.9 + 0.0001 = 0.0037 <= 0.01, a finding. Judged
    # alone against max(0.0091, 0.035) = 0.035: the line is max(0.0875, 0.075) = 0.0875,
    # none of them reaches it: nothing.
    level = wins("p", 0.0119, 0.0091, 0.0091)
    bad_days = [
        game(i, "p", f"o{i}", False, e) for i, e in enumerate((0.0074, 0.0807, 0.073, 0.0544))
    ]
    assert rm.assess_thrown("p", level + bad_days, []) is None
    # The same player throwing three games at 0.09, 0.12 and 0.088 (just past the line): 3 of
    # 4 judged, p = 0.0037: MEDIUM, judged against 0.035.
    thrown = [game(i, "p", f"o{i}", False, e) for i, e in enumerate((0.0074, 0.09, 0.12, 0.088))]
    finding = rm.assess_thrown("p", level + thrown, [])
    assert finding is not None and finding.severity is Severity.MEDIUM
    details = finding.evidence[0].details
    assert details["baseline_error_per_decision"] == "0.0091"
    assert details["judged_against"] == "0.0350"
    assert details["p_value"] == "0.003700"
    assert finding.evidence[0].game_ids == ("g1", "g2", "g3")


def test_a_player_weaker_than_a_beginner_is_judged_against_their_own_level() -> None:
    # Wins at 0.040, 0.038, 0.045: level 0.040, above 0.035, so it stands: the line is
    # max(2.5 x 0.04, 0.04 + 0.04) = 0.10. Three losses at 0.095: under it, nothing.
    level = wins("p", 0.040, 0.038, 0.045)
    under = [game(i, "p", f"o{i}", False, 0.095) for i in range(3)]
    assert rm.assess_thrown("p", level + under, []) is None
    # At 0.10, 0.11, 0.12: 3 of 3 judged, p = 0.1^3 = 0.001: MEDIUM.
    over = [game(i, "p", f"o{i}", False, e) for i, e in enumerate((0.10, 0.11, 0.12))]
    finding = rm.assess_thrown("p", level + over, [])
    assert finding is not None and finding.evidence[0].details["judged_against"] == "0.0400"


# A trading pair as fresh seed 990001 played it: x won 2 of the 8 sessions (no level of
# their own), y won 6; the winner changed 4 times in 7 (y y x y x y y y).
WINNERS = "yyxyxyyy"
THROWN = (0.45, 0.31, 0.33, 0.37, 0.15, 0.21)  # x's losses to y, 25 decisions each


def traded(x_losses: tuple[float, ...] = THROWN) -> tuple[list[Result], list[PlayedGame]]:
    x_lost, x_won = iter(x_losses), iter((0.0049, 0.022))
    y_won, y_lost = iter((0.031, 0.060, 0.026, 0.046, 0.017, 0.024)), iter((0.2288, 0.1906))
    results, games = [], []
    for n, winner in enumerate(WINNERS):
        results.append(Result(f"g{n}", winner, T0 + timedelta(hours=n)))
        if winner == "y":
            games += [game(n, "x", "y", False, next(x_lost)), game(n, "y", "x", True, next(y_won))]
        else:
            games += [game(n, "x", "y", True, next(x_won)), game(n, "y", "x", False, next(y_lost))]
    return results, games


def test_a_win_trader_without_a_level_is_judged_against_a_beginners() -> None:
    results, games = traded()
    # Alternation: 4 changes of 7, P(X >= 4 | 7, 1/2) = (35 + 21 + 7 + 1) / 128 = 0.5: none.
    assert rm.alternations(results) == 4
    # y's level: wins 0.017, 0.024, 0.026, 0.031, 0.046, 0.060, median (0.026 + 0.031) / 2
    # = 0.0285; line max(2.5 x 0.0285, 0.0285 + 0.04) = 0.07125: both y's losses (0.2288,
    # 0.1906) are thrown. x has 2 wins, no level: judged against 0.035, line 0.0875, all 6
    # losses (0.15 to 0.45) thrown. 8 of 8 judged, both threw: p = 0.1^8 = 1e-8 <= 0.01,
    # and 8 >= 2 x 3: HIGH. (Before, x's losses were not judged: 2 thrown, by y alone.)
    losses = rm.pair_losses("x", "y", games)
    assert (losses.judged, len(losses.thrown), losses.played_out) == (8, 8, 0)
    finding = rm.assess_win_trading("x", "y", results, games=games)
    assert finding is not None and finding.severity is Severity.HIGH
    (evidence,) = finding.evidence
    assert evidence.kind == "losses_thrown_to_each_other"
    assert evidence.details["throwers"] == "x,y"
    assert evidence.details["p_value"] == "0.000000"


def test_a_weak_friend_without_a_level_losing_real_games_is_not_a_trader() -> None:
    # x's 6 losses at their ordinary 0.05 to 0.08 (under 0.0875): played out, not thrown.
    # Only y's 2 remain thrown, by one of them: nothing; the alternation (0.5) neither.
    results, games = traded((0.05, 0.06, 0.07, 0.08, 0.06, 0.05))
    losses = rm.pair_losses("x", "y", games)
    assert (losses.judged, len(losses.thrown), losses.played_out) == (8, 2, 6)
    assert losses.throwers == frozenset({"y"})
    assert rm.assess_win_trading("x", "y", results, games=games) is None


def test_a_weak_givers_bad_days_on_a_one_way_flow_are_no_sign_of_dumping() -> None:
    # Fresh seed 880005: a weak friend (true PR 19) whose wins measured 0.015, 0.012, 0.020
    # (level 0.015) lost 10 of 11 games to a strong friend, two of them at 0.0558 and 0.0774.
    # Against 0.015 alone both are far below (line max(0.0375, 0.055) = 0.055): two signs,
    # HIGH. Against max(0.015, 0.035) = 0.035 the line is 0.0875: no sign.
    level = wins("w", 0.015, 0.012, 0.020)
    losses = [game(i, "w", "s", False, e) for i, e in enumerate((0.0558, 0.0774, 0.03, 0.02))]
    assert dumping_play.corroboration("w", "s", level + losses) == []
    # They were real games, played out: 4 of them (each >= 10 decisions, under the line).
    measured = dumping_play.strengths("w", "s", level + losses, [], {"g0", "g1", "g2", "g3"})
    assert measured.giver_level == pytest.approx(0.015)
    assert measured.losses_played_out == 4
    # A giver who throws at 0.09 and 0.20: two signs, and the flow (4 games, 20.00) HIGH.
    dumped = [game(i, "w", "s", False, e) for i, e in enumerate((0.09, 0.20, 0.03, 0.02))]
    evidence = dumping_play.corroboration("w", "s", level + dumped)
    assert [e.kind for e in evidence] == ["played_below_own_level"]
    assert evidence[0].game_ids == ("g0", "g1")
    assert "judged against 0.035" in evidence[0].description
    moved = [
        chip_dumping.Transfer(f"t{i}", f"g{i}", "w", "s", 500, "USD", T0 + timedelta(hours=i))
        for i in range(4)
    ]
    finding = chip_dumping.assess(moved, T0 + timedelta(hours=5), corroboration=evidence)
    assert finding is not None and finding.severity is Severity.HIGH
