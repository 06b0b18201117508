"""A tournament's life as one aggregate: registration, departures, the draw at close,
cancellation below the minimum, the start, prizes; and its stored forms."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain import lobby
from services.tournaments.domain.draw import commitment, seating_order
from services.tournaments.domain.lobby import Entrant, RegistrationRefused, Status, Tournament
from services.tournaments.domain.rules import Rules, Scheduled, SitAndGo
from services.tournaments.store import bracket_from_rows, match_values

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)
SEED = bytes(range(32))


def sit_and_go(seats: int = 4) -> Tournament:
    rules = Rules(SitAndGo(seats), (3, 5), "blitz", "USD", 1_001, 99, "standard")
    return Tournament("t-1", "Sit & Go", rules, SEED, NOW)


def scheduled(minimum: int = 3) -> Tournament:
    start = Scheduled(
        starts_at=NOW + timedelta(hours=2),
        registration_opens_at=NOW - timedelta(hours=1),
        registration_closes_at=NOW + timedelta(hours=1),
        min_entrants=minimum,
        max_entrants=8,
    )
    rules = Rules(start, (1,), "standard", "EUR", 500, 50, "standard")
    return Tournament("t-2", "Evening", rules, SEED, NOW)


def entrant(name: str) -> Entrant:
    return Entrant(name, f"{name}-buy-in", f"{name}-fee", NOW)


def seated(tournament: Tournament, *names: str) -> Tournament:
    for name in names:
        tournament = lobby.register(tournament, entrant(name), NOW)
    return tournament


def test_registering_twice_changes_nothing_and_a_full_table_takes_nobody() -> None:
    tournament = seated(sit_and_go(), "a", "b")
    assert lobby.register(tournament, entrant("a"), NOW) is tournament
    full = seated(tournament, "c", "d")
    with pytest.raises(RegistrationRefused, match="full"):
        lobby.register(full, entrant("e"), NOW)


def test_the_last_seat_closes_a_sit_and_go_with_the_seating_drawn_from_the_seed() -> None:
    three = seated(sit_and_go(), "d", "b", "a")
    assert not lobby.registration_closes(three, NOW)
    four = seated(three, "c")
    assert lobby.registration_closes(four, NOW)
    closed = lobby.close_registration(four)
    assert closed.status is Status.SEATED
    assert closed.bracket is not None
    assert closed.bracket.order == seating_order(SEED, "t-1", ["a", "b", "c", "d"])
    assert closed.revealed_seed == SEED and four.revealed_seed is None
    assert closed.commitment == commitment(SEED)
    assert lobby.start_due(closed, NOW)


def test_leaving_is_allowed_only_before_registration_closes() -> None:
    tournament = seated(sit_and_go(), "a", "b")
    after, gone = lobby.unregister(tournament, "a")
    assert gone.hold_ids == ("a-buy-in", "a-fee")
    assert [e.account_id for e in after.entrants] == ["b"]
    with pytest.raises(RegistrationRefused, match="not registered"):
        lobby.unregister(after, "a")
    closed = lobby.close_registration(seated(tournament, "c", "d"))
    with pytest.raises(RegistrationRefused, match="closed registration"):
        lobby.unregister(closed, "a")


def test_a_scheduled_event_takes_entries_only_in_its_window() -> None:
    tournament = scheduled()
    early = NOW - timedelta(hours=2)
    late = NOW + timedelta(hours=1)
    assert "opens at" in (lobby.registration_refusal(tournament, "a", early) or "")
    assert "closed at" in (lobby.registration_refusal(tournament, "a", late) or "")
    assert lobby.registration_refusal(tournament, "a", NOW) is None
    assert not lobby.registration_closes(tournament, NOW)
    assert lobby.registration_closes(tournament, late)


def test_below_its_minimum_a_scheduled_event_is_cancelled_never_drawn() -> None:
    two = seated(scheduled(minimum=3), "a", "b")
    cancelled = lobby.close_registration(two)
    assert cancelled.status is Status.CANCELLING and cancelled.bracket is None
    assert "below the minimum of 3" in cancelled.cancel_reason
    assert cancelled.revealed_seed is None


def test_a_scheduled_event_starts_at_its_start_time_not_at_the_close() -> None:
    closed = lobby.close_registration(seated(scheduled(), "a", "b", "c"))
    assert not lobby.start_due(closed, NOW + timedelta(hours=1))
    assert lobby.start_due(closed, NOW + timedelta(hours=2))
    started = lobby.started(closed, NOW + timedelta(hours=2))
    assert started.status is Status.RUNNING and started.house_revenue == 3 * 50
    assert started.prize_pool == 3 * 500


def test_prizes_follow_the_table_once_the_final_is_won() -> None:
    # 4 x 10.01 = 40.04 at 70/30: 28.028 -> 28.02, 12.012 -> 12.01, one cent to 1st.
    tournament = lobby.close_registration(seated(sit_and_go(), "a", "b", "c", "d"))
    with pytest.raises(brackets.MatchNotInPlay):
        lobby.prizes(tournament)
    bracket = tournament.bracket
    assert bracket is not None
    for match_id in ("r1m1", "r1m2", "r2m1"):
        match = bracket.match(match_id)
        players = brackets.order_of(match)
        bracket = brackets.start(bracket, match_id, f"g-{match_id}").bracket
        bracket = brackets.record_result(
            bracket, match_id, game_id=f"g-{match_id}", winner=players[0]
        ).bracket
    final = bracket.final
    awards = lobby.prizes(lobby.with_bracket(tournament, bracket))
    assert awards == {final.players[0]: 2_803, final.players[1]: 1_201}


def test_rules_and_brackets_survive_their_stored_forms() -> None:
    for tournament in (sit_and_go(), scheduled()):
        stored = messages.rules_json(tournament.rules)
        assert messages.rules_from_json(stored) == tournament.rules
    bracket = lobby.close_registration(seated(scheduled(), "a", "b", "c")).bracket  # one bye
    assert bracket is not None
    bracket = brackets.start(bracket, "r1m2", "g-1").bracket
    rows = [SimpleNamespace(**match_values("t", match)) for match in bracket.matches()]
    assert bracket_from_rows(bracket.order, reversed(rows)) == bracket


def test_a_tournament_shows_its_seed_only_once_drawn() -> None:
    open_one = seated(sit_and_go(), "a")
    shown = messages.tournament_message(open_one)
    assert shown.seed == "" and shown.seed_commitment == commitment(SEED)
    drawn = lobby.close_registration(seated(open_one, "b", "c", "d"))
    shown = messages.tournament_message(replace(drawn, started_at=NOW))
    assert bytes.fromhex(shown.seed) == SEED
    assert len(shown.bracket) == 3 and len(shown.standings) == 4
    assert shown.prize_pool.minor_units == 4 * 1_001
