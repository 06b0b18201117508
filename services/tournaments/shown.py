"""The lobby's view of tournaments: each tournament's message built once for each committed
state, and after a change only the parts the change touched built again.

Owner: the gRPC servicer (:class:`services.tournaments.api.TournamentsApi`), one
:class:`Shown` a process, serving ``GetTournament`` and ``ListTournaments``. Its key is
the aggregate the use case hands out: the store gives one immutable object for each
committed version (``store.TournamentCache``, checked against the version read from the
database on every read, so a change committed by any replica is seen by the next poll on
every replica), and the message is given again only for that very object with the same
prizes. Anything else (another version, or the same one read back from the database) is
built again.

What is built again is what changed: a lobby polling a 1,024-entrant tournament every
second sees a new version at nearly every poll while its matches are played, and building
its 1,023 match and 1,024 standing messages from scratch, the standings worked out for
every player, was most of a poll. :class:`BracketView` keeps a drawn bracket's messages and
each player's standing; a new bracket is compared with the one it last showed match by
match (by identity first: a change keeps the objects of the matches it left alone; by
value otherwise), and only the changed matches' messages and the standings of their
players are made again, in the same order :func:`brackets.standings` gives. A change of
the rules, the seating, the finish or the prizes paid builds the view from scratch.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import OrderedDict
from dataclasses import dataclass

from services.tournaments import messages
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain.lobby import Status, Tournament
from services.tournaments.domain.rules import Rules
from tavla.tournaments.v1 import tournaments_pb2


class BracketView:
    """A drawn bracket's match and standing messages, kept up to date with its changes."""

    def __init__(
        self, rules: Rules, bracket: brackets.Bracket, over: bool, paid: dict[str, int]
    ) -> None:
        self._rules, self._bracket, self._over, self._paid = rules, bracket, over, paid
        self._lengths = [rules.match_length(r) for r in range(1, len(bracket.rounds) + 1)]
        self._matches = [[self._match(m) for m in matches] for matches in bracket.rounds]
        self._seat = {player: n for n, player in enumerate(bracket.order)}
        self._first = brackets.first_matches(bracket)
        placed = brackets.standings(bracket)  # in the order shown
        self._standings = {s.player: s for s in placed}
        self._order = [brackets.standing_order(s, self._seat[s.player]) for s in placed]
        self._messages = [self._standing(s) for s in sorted(placed, key=self._seated)]

    def fits(
        self, rules: Rules, bracket: brackets.Bracket, over: bool, paid: dict[str, int]
    ) -> bool:
        """Whether a change from what is shown to ``bracket`` is one of its matches'
        (else every message may differ: the view is built again)."""
        shown = self._bracket
        same_seating = bracket.order is shown.order or bracket.order == shown.order
        return same_seating and over == self._over and paid == self._paid and rules == self._rules

    def update(self, bracket: brackets.Bracket) -> None:
        """Show ``bracket`` (one that :meth:`fits`): its changed matches and the standings
        of their players."""
        moved: set[str] = set()
        for r, (was, now) in enumerate(zip(self._bracket.rounds, bracket.rounds, strict=True)):
            if was is now:
                continue
            for i, (before, after) in enumerate(zip(was, now, strict=True)):
                if before is not after and before != after:
                    self._matches[r][i] = self._match(after)
                    moved.update(brackets.order_of(before), brackets.order_of(after))
        self._bracket = bracket
        for player in moved:
            self._restand(player)

    def parts(self) -> messages.Parts:
        matches = [message for round_ in self._matches for message in round_]
        return matches, [self._messages[seat] for _, _, seat in self._order]

    def _restand(self, player: str) -> None:
        seat = self._seat[player]
        before = self._standings[player]
        after = brackets.standing(self._bracket, player, self._first[player])
        if after == before:
            return
        del self._order[bisect_left(self._order, brackets.standing_order(before, seat))]
        insort(self._order, brackets.standing_order(after, seat))
        self._standings[player] = after
        self._messages[seat] = self._standing(after)

    def _match(self, match: brackets.Match) -> tournaments_pb2.Match:
        length = self._lengths[match.round - 1]
        return messages.match_message(self._rules, match, self._over, length)

    def _standing(self, standing: brackets.Standing) -> tournaments_pb2.Standing:
        prize = self._paid.get(standing.player)
        return messages.standing_message(standing, self._rules.currency, prize)

    def _seated(self, standing: brackets.Standing) -> int:
        return self._seat[standing.player]


@dataclass(slots=True)
class _Built:
    tournament: Tournament  # the aggregate the message shows (one object per version)
    paid: dict[str, int]
    message: tournaments_pb2.Tournament
    view: BracketView | None


class Shown:
    """The message last built for each of the ``size`` tournaments most recently shown."""

    def __init__(self, size: int = 64) -> None:
        self._built: OrderedDict[str, _Built] = OrderedDict()
        self._size = size

    def message(
        self, tournament: Tournament, paid: dict[str, int] | None = None
    ) -> tournaments_pb2.Tournament:
        """``tournament`` as the lobby shows it, with the prizes ``paid`` (by player)."""
        paid = paid or {}
        found = self._built.get(tournament.id)
        if found is not None and found.tournament is tournament and found.paid == paid:
            self._built.move_to_end(tournament.id)
            return found.message
        view = self._view(tournament, paid, found.view if found is not None else None)
        parts = view.parts() if view is not None else None
        message = messages.tournament_message(tournament, paid, parts)
        self._built[tournament.id] = _Built(tournament, paid, message, view)
        self._built.move_to_end(tournament.id)
        while len(self._built) > self._size:
            self._built.popitem(last=False)
        return message

    @staticmethod
    def _view(
        tournament: Tournament, paid: dict[str, int], view: BracketView | None
    ) -> BracketView | None:
        bracket, rules = tournament.bracket, tournament.rules
        if bracket is None:
            return None
        over = tournament.status is Status.FINISHED
        if view is None or not view.fits(rules, bracket, over, paid):
            return BracketView(rules, bracket, over, paid)
        view.update(bracket)
        return view
