"""Which game events move ratings (services/matchmaking/ratings/results.py): pure, no broker.

The events are built as the game service fills them (tests/support/ratings.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.matchmaking.ratings.results import (
    MATCH,
    RatedResult,
    Unrated,
    from_game_ended,
    from_match_ended,
)
from tavla.game.v1 import game_pb2
from tests.support.ratings import game_ended, match_ended

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
DISCONNECTION = game_pb2.END_REASON_DISCONNECTION


def test_a_real_money_match_counts_its_length() -> None:
    ended = match_ended("ann", "bob", 7, reason=game_pb2.END_REASON_RESIGNED)
    result = from_match_ended(ended.SerializeToString(), NOW)
    assert isinstance(result, RatedResult)
    assert (result.game_id, result.game_number, result.length) == (ended.game_id, MATCH, 7)
    assert (result.winner_id, result.loser_id, result.winner_share) == ("ann", "bob", None)
    assert result.reason_name == "resigned"
    assert result.occurred_at == ended.occurred_at.ToDatetime(tzinfo=UTC)


def test_a_rated_play_money_match_a_tournaments_counts_its_length() -> None:
    ended = match_ended("ann", "bob", 5, currency="PLAY", rated=True)
    ended.stake.minor_units = 0  # a tournament's match is staked on nothing
    result = from_match_ended(ended.SerializeToString(), NOW)
    assert isinstance(result, RatedResult)
    assert (result.winner_id, result.loser_id, result.length) == ("ann", "bob", 5)


def test_a_single_money_game_counts_one_point_under_its_game_number() -> None:
    ended = game_ended("ann", "bob", reason=game_pb2.END_REASON_CUBE_DROPPED, game_number=1)
    result = from_game_ended(ended.SerializeToString(), NOW)
    assert isinstance(result, RatedResult)
    assert (result.length, result.game_number, result.reason_name) == (1, 1, "cube_dropped")


def test_forfeits_are_losses_of_the_whole_match() -> None:
    for reason in (game_pb2.END_REASON_LEFT, game_pb2.END_REASON_TIMEOUT):
        result = from_match_ended(match_ended("ann", "bob", 5, reason=reason).SerializeToString(),
                                  NOW)
        assert isinstance(result, RatedResult)
        assert (result.winner_id, result.length, result.winner_share) == ("ann", 5, None)


def test_a_disconnection_carries_the_winners_share() -> None:
    shares = {"ann": "0.6234", "bob": "0.3766"}
    ended = game_ended("ann", "bob", reason=DISCONNECTION, shares=shares)
    result = from_game_ended(ended.SerializeToString(), NOW)
    assert isinstance(result, RatedResult)
    assert result.winner_share == pytest.approx(0.6234)
    assert result.reason_name == "disconnection"


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (game_ended("ann", "bob", kind=game_pb2.PLAY_KIND_MATCH), "counts with its MatchEnded"),
        (game_ended("ann", "bob", currency="PLAY"), "play money"),
        (match_ended("ann", "bob", 3, currency="PLAY"), "play money"),
    ],
)
def test_games_of_a_match_and_play_money_move_nothing(payload: object, why: str) -> None:
    read = from_game_ended if type(payload).__name__ == "GameEnded" else from_match_ended
    result = read(payload.SerializeToString(), NOW)  # type: ignore[attr-defined]
    assert isinstance(result, Unrated)
    assert why in result.why
    assert not result.fault


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (match_ended("ann", "ann", 3), "not two players"),
        (match_ended("", "bob", 3), "not two players"),
        (match_ended("ann", "bob", 0), "below 1"),
        (game_ended("ann", "bob", reason=DISCONNECTION, shares={"bob": "1"}), "without ann's"),
        (game_ended("ann", "bob", reason=DISCONNECTION, shares={"ann": "lots"}), "not a decimal"),
        (game_ended("ann", "bob", reason=DISCONNECTION, shares={"ann": "1.5"}), "between 0 and 1"),
        (game_ended("ann", "bob", reason=DISCONNECTION, shares={"ann": "NaN"}), "between 0 and 1"),
    ],
)
def test_a_wrong_event_is_a_fault_not_a_rating(payload: object, why: str) -> None:
    read = from_game_ended if type(payload).__name__ == "GameEnded" else from_match_ended
    result = read(payload.SerializeToString(), NOW)  # type: ignore[attr-defined]
    assert isinstance(result, Unrated)
    assert result.fault
    assert why in result.why


def test_an_unreadable_payload_is_a_fault() -> None:
    result = from_match_ended(b"\xff\xff\xff", NOW)
    assert isinstance(result, Unrated)
    assert result.fault
