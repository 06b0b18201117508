"""The knockout bracket: byes, exactly-once advancement, forfeits, standings, awards."""

from __future__ import annotations

import random

import pytest

from services.kit.errors import InvalidArgument
from services.tournaments.domain.bracket import (
    Bracket,
    ConflictingResult,
    Decision,
    MatchNotInPlay,
    MatchState,
    NotInMatch,
    UnknownMatch,
    build,
    bye_matches,
    cash_awards,
    every_entrant,
    final_placings,
    first_matches,
    following,
    record_forfeit,
    record_result,
    standing,
    standing_order,
    standings,
    start,
    ticket_winners,
)
from services.tournaments.domain.draw import seating_order
from services.tournaments.domain.prizes import cash_payouts, prize_table

LETTERS = "abcdefghijklmnop"


def first_round(bracket: Bracket) -> list[tuple[str | None, str | None]]:
    return [m.players for m in bracket.rounds[0]]


def play(bracket: Bracket, match_id: str, winner: str) -> Bracket:
    """Start the match's game and record its winner."""
    bracket = start(bracket, match_id, f"game-{match_id}").bracket
    return record_result(bracket, match_id, game_id=f"game-{match_id}", winner=winner).bracket


def play_out(bracket: Bracket) -> Bracket:
    """Every ready match won by its first seat, until the final is won."""
    while not bracket.finished:
        for match in bracket.ready():
            bracket = play(bracket, match.id, match.players[0] or "")
    return bracket


def test_five_entrants_three_byes() -> None:
    # 8 slots, 4 first-round matches, 3 byes at matches floor(i x 4 / 3) = 0, 1, 2.
    bracket = build(tuple("abcde"))
    assert bye_matches(5) == {0, 1, 2}
    assert first_round(bracket) == [("a", None), ("b", None), ("c", None), ("d", "e")]
    assert [m.players for m in bracket.rounds[1]] == [("a", "b"), ("c", None)]
    assert [m.id for m in bracket.ready()] == ["r1m4", "r2m1"]


def test_six_entrants_two_byes_spread_apart() -> None:
    # 2 byes at matches floor(i x 4 / 2) = 0, 2: each meets a first-round winner.
    bracket = build(tuple("abcdef"))
    assert first_round(bracket) == [("a", None), ("b", "c"), ("d", None), ("e", "f")]
    assert [m.players for m in bracket.rounds[1]] == [("a", None), ("d", None)]
    assert [m.decision for m in bracket.rounds[0]] == [Decision.BYE, None, Decision.BYE, None]


def test_seven_entrants_one_bye() -> None:
    bracket = build(tuple("abcdefg"))
    assert first_round(bracket) == [("a", None), ("b", "c"), ("d", "e"), ("f", "g")]
    assert bracket.rounds[1][0].players == ("a", None)


def test_byes_are_decided_by_the_draw() -> None:
    entrants = [f"acc-{n}" for n in range(6)]
    bracket = build(seating_order(bytes(range(32)), "t-1", entrants))
    byes = {m.winner for m in bracket.rounds[0] if m.decision is Decision.BYE}
    drawn = seating_order(bytes(range(32)), "t-1", entrants)
    assert byes == {drawn[0], drawn[3]}  # the first seats of matches 0 and 2


@pytest.mark.parametrize("field", [*range(2, 70), 1000, 1024])
def test_every_entrant_once_and_never_two_byes_in_a_match(field: int) -> None:
    order = tuple(f"p{n}" for n in range(field))
    bracket = build(order)
    assert list(every_entrant(bracket)) == list(order)
    assert all(m.players[0] is not None for m in bracket.rounds[0])
    size = len(bracket.rounds[0]) * 2
    assert sum(m.players[1] is None for m in bracket.rounds[0]) == size - field
    assert all(m.state is not MatchState.FINISHED for m in bracket.matches() if m.round > 1)


def test_a_result_advances_the_winner_exactly_once() -> None:
    bracket = build(tuple("abcdefgh"))
    bracket = start(bracket, "r1m1", "g1").bracket
    assert start(bracket, "r1m1", "g1").changed is False  # a replayed start
    applied = record_result(bracket, "r1m1", game_id="g1", winner="b")
    assert applied.changed
    assert applied.bracket.rounds[1][0].players == ("b", None)
    again = record_result(applied.bracket, "r1m1", game_id="g1", winner="b")
    assert again.changed is False
    assert again.bracket == applied.bracket


def test_each_match_leads_to_the_one_its_winner_plays_next() -> None:
    bracket = build(tuple("abcdefgh"))
    assert [following(bracket, f"r1m{n}").id for n in range(1, 5)] == [  # type: ignore[union-attr]
        "r2m1", "r2m1", "r2m2", "r2m2",
    ]  # fmt: skip
    assert following(bracket, "r2m2").id == "r3m1"  # type: ignore[union-attr]
    assert following(bracket, "r3m1") is None  # the final
    after = play(play(bracket, "r1m1", "b"), "r1m2", "c")
    assert following(after, "r1m2").players == ("b", "c")  # type: ignore[union-attr]


def test_a_contradicting_result_is_refused() -> None:
    bracket = play(build(tuple("abcd")), "r1m1", "a")
    with pytest.raises(ConflictingResult, match="already won by 'a'"):
        record_result(bracket, "r1m1", game_id="game-r1m1", winner="b")


def test_a_result_for_a_match_not_in_play_is_an_error() -> None:
    bracket = build(tuple("abcd"))
    with pytest.raises(MatchNotInPlay, match="r1m1 is ready, not in play"):
        record_result(bracket, "r1m1", game_id="g1", winner="a")
    bracket = start(bracket, "r1m1", "g1").bracket
    with pytest.raises(MatchNotInPlay, match="game 'g9' is not match r1m1's game"):
        record_result(bracket, "r1m1", game_id="g9", winner="a")
    bracket = record_result(bracket, "r1m1", game_id="g1", winner="a").bracket
    with pytest.raises(MatchNotInPlay, match="r2m1 is waiting"):
        record_result(bracket, "r2m1", game_id="g2", winner="a")
    with pytest.raises(MatchNotInPlay, match="only a ready match"):
        start(bracket, "r2m1", "g2")
    with pytest.raises(MatchNotInPlay, match="only a ready match"):
        start(bracket, "r1m1", "g-other")
    with pytest.raises(UnknownMatch, match="no match 'r3m1'"):
        record_result(bracket, "r3m1", game_id="g3", winner="a")
    with pytest.raises(NotInMatch, match="'c' does not play in match r1m1"):
        record_result(bracket, "r1m1", game_id="g1", winner="c")


def test_a_bye_cannot_be_forfeited_or_contradicted() -> None:
    bracket = build(tuple("abc"))  # a has the bye of match r1m1
    with pytest.raises(MatchNotInPlay, match="r1m1 has no opponent"):
        record_forfeit(bracket, "r1m1", loser="a", decision=Decision.NO_SHOW)
    assert bracket.match("r1m1").winner == "a"
    assert bracket.match("r1m1").loser is None


@pytest.mark.parametrize("match_id", ["", "x", "r0m1", "r1m0", "r1m3", "r3m1", "r1m1x", "m1r1"])
def test_a_match_id_outside_the_bracket_is_unknown(match_id: str) -> None:
    with pytest.raises(UnknownMatch, match="no match"):
        build(tuple("abcd")).match(match_id)


def test_a_no_show_forfeits_to_the_opponent_exactly_once() -> None:
    bracket = build(tuple("abcd"))
    applied = record_forfeit(bracket, "r1m2", loser="c", decision=Decision.NO_SHOW)
    assert applied.changed
    match = applied.bracket.match("r1m2")
    assert (match.winner, match.loser, match.decision) == ("d", "c", Decision.NO_SHOW)
    assert applied.bracket.rounds[1][0].players == (None, "d")
    replay = record_forfeit(applied.bracket, "r1m2", loser="c", decision=Decision.NO_SHOW)
    assert replay.changed is False
    with pytest.raises(ConflictingResult):
        record_forfeit(applied.bracket, "r1m2", loser="d", decision=Decision.DISCONNECTED)


def test_a_disconnection_forfeits_a_match_in_play() -> None:
    bracket = start(build(tuple("abcd")), "r1m1", "g1").bracket
    applied = record_forfeit(bracket, "r1m1", loser="a", decision=Decision.DISCONNECTED)
    assert applied.bracket.match("r1m1").winner == "b"
    with pytest.raises(MatchNotInPlay, match="r2m1 has no opponent for 'b' to forfeit to"):
        record_forfeit(applied.bracket, "r2m1", loser="b", decision=Decision.NO_SHOW)
    with pytest.raises(InvalidArgument, match="no-show or a disconnection"):
        record_forfeit(bracket, "r1m2", loser="c", decision=Decision.PLAYED)


def test_eight_players_placed_and_paid_by_65_35() -> None:
    bracket = build(tuple("abcdefgh"))
    # Quarter-finals: a, c, e, g win; semi-finals: a, e; final: e beats a.
    for match_id, winner in (("r1m1", "a"), ("r1m2", "c"), ("r1m3", "e"), ("r1m4", "g"),
                             ("r2m1", "a"), ("r2m2", "e"), ("r3m1", "e")):
        bracket = play(bracket, match_id, winner)
    assert bracket.champion == "e"
    placings = {s.player: (s.best, s.worst) for s in final_placings(bracket)}
    assert placings == {"e": (1, 1), "a": (2, 2), "c": (3, 4), "g": (3, 4),
                        "b": (5, 8), "d": (5, 8), "f": (5, 8), "h": (5, 8)}
    awards = cash_awards(bracket, cash_payouts(8000, prize_table("standard"), 8))
    assert awards == {"e": 5200, "a": 2800}


def test_sixteen_players_semi_final_losers_share_alike() -> None:
    bracket = play_out(build(tuple(LETTERS)))
    # The first seat always wins: a beats i in the final; e and m lose the semi-finals.
    awards = cash_awards(bracket, cash_payouts(1003, prize_table("standard"), 16))
    assert awards == {"a": 503, "i": 250, "e": 125, "m": 125}
    assert sum(awards.values()) == 1003


def test_five_players_standings_as_the_event_goes() -> None:
    bracket = build(tuple("abcde"))
    assert {s.player: (s.best, s.worst, s.alive) for s in standings(bracket)} == {
        "a": (1, 4, True), "b": (1, 4, True), "c": (1, 4, True),
        "d": (1, 5, True), "e": (1, 5, True),
    }
    bracket = play(bracket, "r1m4", "e")
    by_player = {s.player: s for s in standings(bracket)}
    assert (by_player["d"].best, by_player["d"].worst, by_player["d"].eliminated_in) == (5, 5, 1)
    assert by_player["e"].wins == 1 and by_player["a"].wins == 0  # a bye is not a win
    with pytest.raises(MatchNotInPlay, match="before its final"):
        final_placings(bracket)
    bracket = play_out(bracket)
    assert [(s.player, s.best, s.worst) for s in final_placings(bracket)] == [
        ("a", 1, 1), ("c", 2, 2), ("b", 3, 4), ("e", 3, 4), ("d", 5, 5),
    ]
    assert len(standings(bracket)) == 5


@pytest.mark.parametrize("field", [2, 3, 5, 6, 7, 8, 13, 16, 21, 32, 37])
def test_one_players_standing_is_theirs_in_the_standings_at_every_step(field: int) -> None:
    """``standing`` follows one player up from their first match (what the lobby works
    out again for the players of a changed match) and agrees with ``standings``, whose
    order ``standing_order`` gives, after every game, result and forfeit of random play."""
    rng = random.Random(field)
    bracket = build(tuple(f"p{n}" for n in range(field)))
    first = first_matches(bracket)
    assert sorted(first) == sorted(bracket.order)
    seat = {player: n for n, player in enumerate(bracket.order)}
    while True:
        listed = standings(bracket)
        assert [standing(bracket, s.player, first[s.player]) for s in listed] == list(listed)
        assert sorted(listed, key=lambda s: standing_order(s, seat[s.player])) == list(listed)
        if bracket.finished:
            break
        match = rng.choice([m for m in bracket.matches() if m.state in (MatchState.READY,
                                                                          MatchState.PLAYING)])
        players = [p for p in match.players if p is not None]
        if match.state is MatchState.READY and rng.random() < 0.2:
            bracket = record_forfeit(bracket, match.id, loser=rng.choice(players),
                                     decision=Decision.NO_SHOW).bracket
        elif match.state is MatchState.READY:
            bracket = start(bracket, match.id, f"g-{match.id}").bracket
        else:
            bracket = record_result(bracket, match.id, game_id=match.game_id,
                                    winner=rng.choice(players)).bracket
    elsewhere = [i for i in range(len(bracket.rounds[0])) if i != first[bracket.order[0]]]
    for index in elsewhere[:1]:  # a first match that is not theirs is refused
        with pytest.raises(NotInMatch):
            standing(bracket, bracket.order[0], index)


def test_satellite_ticket_winners_are_decided_when_no_more_remain() -> None:
    bracket = build(tuple("abcdefgh"))
    assert ticket_winners(bracket, 4) is None
    for match_id, winner in (("r1m1", "a"), ("r1m2", "d"), ("r1m3", "e")):
        bracket = play(bracket, match_id, winner)
    assert ticket_winners(bracket, 4) is None
    bracket = play(bracket, "r1m4", "h")
    assert ticket_winners(bracket, 4) == ("a", "d", "e", "h")
    with pytest.raises(InvalidArgument, match="3 tickets would split a shared finish"):
        ticket_winners(bracket, 3)
