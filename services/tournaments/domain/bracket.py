"""A single-elimination bracket: byes, play, results applied exactly once, and placings.

**Building.** A field of ``n`` entrants plays in a bracket of ``S`` slots (the smallest
power of two not below ``n``), ``S / 2`` first-round matches and ``b = S - n`` byes.
The byes go to the first-round matches numbered ``floor(i x (S/2) / b)`` for ``i``
in ``0..b-1``, spread evenly down the bracket and never two in one match (``b <
S/2``); the drawn order (``draw.py``) then fills the matches from the top, two
entrants a match and one for a match with a bye. So the draw alone decides who
receives a bye. A bye is decided at once and its entrant moves on.

**Play.** A match is WAITING until both its players are known, then READY; the
service creates its game and starts it (PLAYING, with the game id); a result
FINISHES it and puts the winner into the next round's match (match ``i`` of a round
feeds match ``i // 2`` of the next, as its first seat when ``i`` is even). Every
change returns a new bracket and whether it changed anything:

- the same result applied again (the same winner) changes nothing, so a redelivered
  "match ended" event advances nobody twice;
- another winner for a finished match, a result for a match that is not in play, or
  for a game that is not the match's, is an error and changes nothing;
- a forfeit (a no-show, or a disconnection beyond the game's rules) finishes a READY
  or PLAYING match for the opponent.

**Placings.** The winner is 1st and the final's loser 2nd; players who lose in an
earlier round share a range of places (``field.py``): the semi-final losers 3rd-4th,
the quarter-final losers 5th-8th, and so on. A shared range is paid by the prize of
its best place; prize tables give a range's places equal shares, so this is their
share.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from services.kit.errors import FailedPrecondition, InvalidArgument, NotFound
from services.tournaments.domain.field import (
    bracket_size,
    complete_tier_ends,
    entering,
    places_of_losers,
    require_field,
)


class UnknownMatch(NotFound):
    """No match of this id in the bracket."""


class MatchNotInPlay(FailedPrecondition):
    """A result or a start for a match that is not at that stage."""


class ConflictingResult(FailedPrecondition):
    """A result that contradicts the one already recorded."""


class NotInMatch(InvalidArgument):
    """A winner or a forfeiting player who does not play in the match."""


class MatchState(StrEnum):
    WAITING = "waiting"  # one or both players still to come from the previous round
    READY = "ready"  # both players known, no game yet
    PLAYING = "playing"  # its game is being played
    FINISHED = "finished"


class Decision(StrEnum):
    """How a finished match was decided."""

    PLAYED = "played"
    BYE = "bye"
    NO_SHOW = "no_show"
    DISCONNECTED = "disconnected"


FORFEITS = (Decision.NO_SHOW, Decision.DISCONNECTED)


@dataclass(frozen=True, slots=True)
class Match:
    round: int  # 1-based; the last round is the final
    index: int  # 0-based from the top of the bracket
    players: tuple[str | None, str | None]
    game_id: str = ""
    winner: str | None = None
    decision: Decision | None = None

    @property
    def id(self) -> str:
        return match_id(self.round, self.index)

    @property
    def state(self) -> MatchState:
        if self.winner is not None:
            return MatchState.FINISHED
        if self.game_id:
            return MatchState.PLAYING
        if None in self.players:
            return MatchState.WAITING
        return MatchState.READY

    @property
    def loser(self) -> str | None:
        if self.winner is None or self.decision is Decision.BYE:
            return None
        return self.opponent(self.winner)

    def opponent(self, player: str) -> str | None:
        """The other player of the match (None for a bye or one still to come)."""
        if not player or player not in self.players:
            raise NotInMatch(f"{player!r} does not play in match {self.id}")
        return self.players[1] if self.players[0] == player else self.players[0]


def match_id(round_number: int, index: int) -> str:
    """A match's id: ``r2m3`` is the third match from the top in round 2."""
    return f"r{round_number}m{index + 1}"


@dataclass(frozen=True, slots=True)
class Bracket:
    field: int
    order: tuple[str, ...]  # the drawn seating order
    rounds: tuple[tuple[Match, ...], ...]

    @property
    def final(self) -> Match:
        return self.rounds[-1][0]

    @property
    def champion(self) -> str | None:
        return self.final.winner

    @property
    def finished(self) -> bool:
        return self.champion is not None

    def matches(self) -> Iterator[Match]:
        for matches in self.rounds:
            yield from matches

    def match(self, id_: str) -> Match:
        round_text, _, number_text = id_.removeprefix("r").partition("m")
        if id_.startswith("r") and round_text.isdigit() and number_text.isdigit():
            round_number, index = int(round_text), int(number_text) - 1
            if 1 <= round_number <= len(self.rounds) and 0 <= index < len(
                self.rounds[round_number - 1]
            ):
                return self.rounds[round_number - 1][index]
        raise UnknownMatch(f"this tournament has no match {id_!r}")

    def ready(self) -> tuple[Match, ...]:
        """The matches whose game the service should create now."""
        return tuple(m for m in self.matches() if m.state is MatchState.READY)


@dataclass(frozen=True, slots=True)
class Applied:
    """A bracket after a change, and whether the change did anything (False: a replay)."""

    bracket: Bracket
    changed: bool


def bye_matches(field: int) -> frozenset[int]:
    """The indexes of the first-round matches that hold a bye."""
    first_round = bracket_size(field) // 2
    byes = bracket_size(field) - field
    return frozenset(i * first_round // byes for i in range(byes))


def build(order: Sequence[str]) -> Bracket:
    """The bracket of the drawn ``order``, its byes decided and moved on."""
    field = require_field(len(order))
    if len(set(order)) != field or not all(order):
        raise InvalidArgument("a bracket's entrants are distinct, non-empty account ids")
    size = bracket_size(field)
    rounds = [
        [Match(r, i, (None, None)) for i in range(size >> r)]
        for r in range(1, size.bit_length())
    ]
    seats = iter(order)
    byes = bye_matches(field)
    for i in range(size // 2):
        rounds[0][i] = Match(1, i, (next(seats), None if i in byes else next(seats)))
    bracket = Bracket(field, tuple(order), tuple(tuple(matches) for matches in rounds))
    for i in sorted(byes):
        bye = bracket.rounds[0][i]
        bracket = _finish(bracket, bye, order_of(bye)[0], Decision.BYE)
    return bracket


def order_of(match: Match) -> list[str]:
    """The match's players present, top seat first."""
    return [player for player in match.players if player is not None]


def start(bracket: Bracket, id_: str, game_id: str) -> Applied:
    """The match's game was created: READY -> PLAYING (the same game again: no change)."""
    match = bracket.match(id_)
    if not game_id:
        raise InvalidArgument("a started match needs its game's id")
    if match.state is MatchState.PLAYING and match.game_id == game_id:
        return Applied(bracket, False)
    if match.state is not MatchState.READY:
        raise MatchNotInPlay(
            f"match {match.id} is {match.state.value}: only a ready match can start a game"
        )
    return Applied(_replace(bracket, replace(match, game_id=game_id)), True)


def record_result(bracket: Bracket, id_: str, *, game_id: str, winner: str) -> Applied:
    """The match's game ended with ``winner``; the winner moves on exactly once."""
    match = bracket.match(id_)
    match.opponent(winner)  # the winner plays in this match
    if match.state is MatchState.FINISHED:
        return _replay(bracket, match, winner)
    if match.state is not MatchState.PLAYING:
        raise MatchNotInPlay(f"match {match.id} is {match.state.value}, not in play")
    if game_id != match.game_id:
        raise MatchNotInPlay(
            f"game {game_id!r} is not match {match.id}'s game ({match.game_id!r})"
        )
    return Applied(_finish(bracket, match, winner, Decision.PLAYED), True)


def record_forfeit(bracket: Bracket, id_: str, *, loser: str, decision: Decision) -> Applied:
    """``loser`` did not show or stayed away: the opponent wins the match."""
    if decision not in FORFEITS:
        raise InvalidArgument(f"a forfeit is a no-show or a disconnection, not {decision}")
    match = bracket.match(id_)
    winner = match.opponent(loser)
    if winner is None:
        raise MatchNotInPlay(f"match {match.id} has no opponent for {loser!r} to forfeit to")
    if match.state is MatchState.FINISHED:
        return _replay(bracket, match, winner)
    if match.state not in (MatchState.READY, MatchState.PLAYING):
        raise MatchNotInPlay(f"match {match.id} is {match.state.value}, not in play")
    return Applied(_finish(bracket, match, winner, decision), True)


def _replay(bracket: Bracket, match: Match, winner: str) -> Applied:
    if match.winner == winner:
        return Applied(bracket, False)
    raise ConflictingResult(
        f"match {match.id} was already won by {match.winner!r}; a result for {winner!r} "
        "contradicts it and is not applied"
    )


def following(bracket: Bracket, id_: str) -> Match | None:
    """The match the winner of match ``id_`` plays next (None after the final)."""
    match = bracket.match(id_)
    if match.round == len(bracket.rounds):
        return None
    return bracket.rounds[match.round][match.index // 2]


def _finish(bracket: Bracket, match: Match, winner: str, decision: Decision) -> Bracket:
    bracket = _replace(bracket, replace(match, winner=winner, decision=decision))
    if match.round == len(bracket.rounds):
        return bracket
    following = bracket.rounds[match.round][match.index // 2]
    seats = list(following.players)
    seats[match.index % 2] = winner
    return _replace(bracket, replace(following, players=(seats[0], seats[1])))


def _replace(bracket: Bracket, match: Match) -> Bracket:
    rounds = list(bracket.rounds)
    matches = list(rounds[match.round - 1])
    matches[match.index] = match
    rounds[match.round - 1] = tuple(matches)
    return replace(bracket, rounds=tuple(rounds))


@dataclass(frozen=True, slots=True)
class Standing:
    """Where a player stands: the places they can still finish in (``best``..``worst``);
    for a player out of the tournament, the places they share with the others out in
    the same round."""

    player: str
    best: int
    worst: int
    alive: bool
    eliminated_in: int | None  # the round they lost, None while still in
    wins: int  # matches won by play or forfeit (a bye is not a win)


def standings(bracket: Bracket) -> tuple[Standing, ...]:
    """Every entrant once, from the best place down (drawn order within a place)."""
    latest: dict[str, Match] = {}
    wins = dict.fromkeys(bracket.order, 0)
    for match in bracket.matches():  # round by round, so the latest match is kept
        for player in order_of(match):
            latest[player] = match
        if match.winner is not None and match.decision is not Decision.BYE:
            wins[match.winner] += 1
    # Each round's places, worked out once, not once per player (a lobby's poll of a
    # 1,024-entrant tournament lists them all).
    rounds = range(1, len(bracket.rounds) + 1)
    losers = {r: places_of_losers(bracket.field, r) for r in rounds}
    in_round = {r: entering(bracket.field, r) for r in rounds}
    listed = [
        _standing(latest[p], p, wins[p], losers[latest[p].round], in_round[latest[p].round])
        for p in bracket.order
    ]
    seat = {player: n for n, player in enumerate(bracket.order)}
    return tuple(sorted(listed, key=lambda s: standing_order(s, seat[s.player])))


def standing_order(standing: Standing, seat: int) -> tuple[int, int, int]:
    """Where ``standing`` comes in :func:`standings`: by place, then by ``seat`` (the
    player's position in the drawn order)."""
    return standing.best, standing.worst, seat


def first_matches(bracket: Bracket) -> dict[str, int]:
    """Each entrant's first-round match (its index): where :func:`standing` starts."""
    return {
        player: index
        for index, match in enumerate(bracket.rounds[0])
        for player in order_of(match)
    }


def standing(bracket: Bracket, player: str, first: int) -> Standing:
    """``player``'s standing (as :func:`standings` gives it), followed from their
    first-round match ``first`` up the bracket: a few matches, not the whole bracket."""
    last, wins, index = bracket.rounds[0][first], 0, first
    for matches in bracket.rounds:
        match = matches[index]
        if player not in match.players:
            break
        last, index = match, index // 2
        if match.winner == player and match.decision is not Decision.BYE:
            wins += 1
    if player not in last.players:
        raise NotInMatch(f"{player!r} does not play in first-round match {last.id}")
    field = bracket.field
    return _standing(
        last, player, wins, places_of_losers(field, last.round), entering(field, last.round)
    )


def _standing(
    last: Match, player: str, wins: int, losers: tuple[int, int], in_round: int
) -> Standing:
    """``losers``: the places of the losers of ``last``'s round; ``in_round``: its players."""
    if last.winner == player:  # only the champion has won their latest match
        return Standing(player, 1, 1, True, None, wins)
    if last.winner is not None and last.decision is not Decision.BYE:  # they lost it
        best, worst = losers
        return Standing(player, best, worst, False, last.round, wins)
    return Standing(player, 1, in_round, True, None, wins)


def final_placings(bracket: Bracket) -> tuple[Standing, ...]:
    """The finished tournament's places; an error while it is still being played."""
    if not bracket.finished:
        raise MatchNotInPlay("the tournament has no final placings before its final is won")
    return standings(bracket)


def cash_awards(bracket: Bracket, payouts: Sequence[int]) -> dict[str, int]:
    """What each player placed in the money wins, from the payouts of places 1, 2, ..."""
    awards: dict[str, int] = {}
    for standing in final_placings(bracket):
        if standing.best > len(payouts):
            continue
        shared = set(payouts[standing.best - 1 : standing.worst])
        if len(shared) != 1:
            raise ValueError(f"places {standing.best}-{standing.worst} are paid unequally")
        awards[standing.player] = payouts[standing.best - 1]
    return awards


def ticket_winners(bracket: Bracket, winners: int) -> tuple[str, ...] | None:
    """The satellite's ticket winners once they are decided: as soon as no more players
    remain than tickets, every remaining player has one (the rest need not be played).
    None while more players remain."""
    if winners not in complete_tier_ends(bracket.field):
        raise InvalidArgument(
            f"{winners} tickets would split a shared finish: one of "
            f"{complete_tier_ends(bracket.field)}"
        )
    remaining = [s.player for s in standings(bracket) if s.alive]
    return tuple(remaining) if len(remaining) <= winners else None


def every_entrant(bracket: Bracket) -> Iterable[str]:
    """The entrants seated in the first round, top to bottom (each exactly once)."""
    for match in bracket.rounds[0]:
        yield from order_of(match)
