"""Collusion in tournaments, run when a tournament match is decided, or when the session
of a played one ends or is analysed (the streams come in any order).

The pure part is :mod:`services.antiabuse.domain.tournament_play`: soft play between a
pair (the loser's analysed game against their own level, the thrown-loss rule of
:mod:`services.antiabuse.domain.play`), and chip dumping through forfeits (the
forfeiter's forfeits to a receiver and the accounts strong links make one person with
them). Facts: :class:`services.antiabuse.tournament_store.TournamentFacts`, and the
players' analysed sessions from :class:`services.antiabuse.results_store.ResultFacts`.
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain import tournament_play as domain
from services.antiabuse.results_store import ResultFacts
from services.antiabuse.tournament_store import TournamentFacts


class TournamentCollusion:
    def __init__(
        self, linking: MultiAccounting, policy: domain.TournamentPolicy = domain.DEFAULT_POLICY
    ) -> None:
        self._linking = linking
        self._policy = policy

    async def decided(self, work: Work, match: domain.TournamentMatch) -> None:
        """A match newly decided: a forfeit tests its forfeiter, a played one its pair."""
        if match.forfeited:
            await self.forfeits(work, match.loser, match.winner)
        else:
            await self.soft_play(work, match.winner, match.loser)

    async def session_complete(self, work: Work, game_id: str) -> None:
        """A session ended or analysed: if it was a tournament match, its pair again."""
        match = await TournamentFacts(work.session).by_game(game_id)
        if match is not None and not match.forfeited:
            await self.soft_play(work, match.winner, match.loser)

    async def soft_play(self, work: Work, first: str, second: str) -> None:
        since = work.clock.now() - self._policy.window
        matches = await TournamentFacts(work.session).between(first, second, since)
        if not any(m.decision == "played" for m in matches):
            return
        results = ResultFacts(work.session)
        games = {a: await results.played_games(a, since) for a in (first, second)}
        if not domain.soft_played(matches, games, self._policy):
            return  # most pairs: nobody lost far below their level, no links to read
        one_person = second in await self._linking.one_person(work.facts, first)
        finding = domain.assess_soft_play(
            first, second, matches, games, one_person=one_person, policy=self._policy
        )
        if finding is not None:
            await raise_alert(work, finding)

    async def forfeits(self, work: Work, forfeiter: str, receiver: str) -> None:
        since = work.clock.now() - self._policy.window
        matches = await TournamentFacts(work.session).of_account(forfeiter, since)
        group = await self._linking.one_person(work.facts, receiver) | {receiver}
        finding = domain.assess_forfeits(
            forfeiter, group, matches, one_person=forfeiter in group, policy=self._policy
        )
        if finding is not None:
            await work.locks.take(finding.subjects)
            await raise_alert(work, finding)
