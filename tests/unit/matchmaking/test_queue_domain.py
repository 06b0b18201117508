"""The queue's pure parts: pools, what a ticket accepts, retries and leaving; its settings."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from services.kit.config import ConfigError, Env
from services.kit.errors import FailedPrecondition, InvalidArgument
from services.matchmaking.domain.queue import (
    Pairing,
    QueueTicket,
    TicketStatus,
    accepted_difference,
    pool_of,
)
from services.matchmaking.domain.tables import Kind, Rules, Sitter
from services.matchmaking.main import MatchmakingSettings

MONEY = Rules(kind=Kind.MONEY_GAME, match_length=0, stake_minor=500, currency="USD")
AT = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def ticket(**changes: object) -> QueueTicket:
    made = QueueTicket("t1", Sitter("a1", "MT", "192.0.2.1"), MONEY, 300.0, AT)
    return replace(made, **changes)  # type: ignore[arg-type]


def test_only_equal_rules_share_a_pool() -> None:
    assert pool_of(MONEY) == "money_game:0:500:USD:64:0:0:0:standard"
    others = [
        replace(MONEY, stake_minor=501),
        replace(MONEY, currency="EUR"),
        replace(MONEY, cube_cap=8),
        replace(MONEY, beaver=True),
        replace(MONEY, jacoby=True),
        replace(MONEY, clock="blitz"),
        Rules(kind=Kind.MATCH, match_length=5, stake_minor=500, currency="USD", crawford=True),
    ]
    pools = {pool_of(rules) for rules in others}
    assert len(pools) == len(others) and pool_of(MONEY) not in pools


def test_what_a_ticket_accepts() -> None:
    assert accepted_difference(0) == 300.0  # the default
    assert accepted_difference(75) == 75.0
    assert accepted_difference(4000) == 4000.0
    with pytest.raises(InvalidArgument, match="max_rating_difference"):
        accepted_difference(4001)


def test_a_retry_answers_the_same_ticket_and_other_rules_are_refused() -> None:
    waiting = ticket()
    assert waiting.same_request(MONEY, 300.0, "k") is waiting
    with pytest.raises(FailedPrecondition, match="already entered ticket t1 with other rules"):
        waiting.same_request(replace(MONEY, stake_minor=600), 300.0, "k")
    with pytest.raises(FailedPrecondition):
        waiting.same_request(MONEY, 200.0, "k")


def test_leaving() -> None:
    assert ticket().cancelled().status is TicketStatus.CANCELLED
    matched = ticket(status=TicketStatus.MATCHED, game_id="g")
    assert matched.cancelled() is matched  # a finished ticket stays as it is
    seating = ticket(status=TicketStatus.SEATING, pairing=Pairing("tb", "a2", 1500.0, 1500.0))
    with pytest.raises(FailedPrecondition, match="being seated at table tb"):
        seating.check_leave()
    assert [s for s in TicketStatus if s.live] == [TicketStatus.WAITING, TicketStatus.SEATING]


def test_a_ticket_as_the_wave_sees_it() -> None:
    seen = ticket().for_pairing(1612.5)
    assert (seen.ticket_id, seen.account_id, seen.rating) == ("t1", "a1", 1612.5)
    assert (seen.max_rating_difference, seen.entered_at) == (300.0, AT)


def test_wave_and_watch_settings() -> None:
    base = {"TAVLA_WALLET_ADDRESS": "w:1", "TAVLA_GAME_ADDRESS": "g:1"}
    settings = MatchmakingSettings.from_env(Env(base))
    assert (settings.wave_seconds, settings.watch_poll_seconds) == (2.0, 0.5)
    tuned = MatchmakingSettings.from_env(
        Env({**base, "TAVLA_MATCHMAKING_WAVE_SECONDS": "0.5",
             "TAVLA_MATCHMAKING_WATCH_POLL_SECONDS": "0.25"})
    )
    assert (tuned.wave_seconds, tuned.watch_poll_seconds) == (0.5, 0.25)
    with pytest.raises(ConfigError, match="TAVLA_MATCHMAKING_WAVE_SECONDS"):
        MatchmakingSettings.from_env(Env({**base, "TAVLA_MATCHMAKING_WAVE_SECONDS": "0"}))
