"""Intentional losing and rating manipulation, run when a session's result, its analysis or a
rating change arrives.

The pure part is :mod:`services.antiabuse.domain.rating_manipulation`: thrown losses
(with sandbagging as evidence) per account, win trading per pair. Facts come from
:class:`services.antiabuse.results_store.ResultFacts`. Before thrown losses are judged, the
pairs they were lost to are read for a one-way money flow (the settlements chip dumping
reads, only when there are enough thrown losses to judge): losses that move money one way
to one account are chip dumping's (the domain module says why), from the first of them:
chip dumping needs 4 games and 20.00 before it judges a flow, and a dumper's first three
thrown losses are no attempt on the rating either. Win trading reads both accounts'
analysed sessions (their levels and their losses to each other) once the pair has played
``min_thrown`` sessions and each has won one.
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.domain import chip_dumping
from services.antiabuse.domain import rating_manipulation as domain
from services.antiabuse.domain.play import PlayedGame, thrown
from services.antiabuse.results_store import ResultFacts


class RatingManipulation:
    def __init__(
        self,
        policy: domain.RatingPolicy = domain.DEFAULT_POLICY,
        flows: chip_dumping.FlowPolicy = chip_dumping.DEFAULT_POLICY,
    ) -> None:
        self._policy = policy
        self._flows = flows

    async def thrown(self, work: Work, account_id: str) -> None:
        facts = ResultFacts(work.session)
        since = work.clock.now() - self._policy.window
        games = await facts.played_games(account_id, since)
        if domain.assess_thrown(account_id, games, [], self._policy) is None:
            return  # no thrown losses: neither flows nor ratings can make a finding
        receivers = await self._receivers(work, account_id, games)
        if domain.assess_thrown(account_id, games, [], self._policy, receivers) is None:
            return
        changes = await facts.rating_changes(account_id, since)
        finding = domain.assess_thrown(account_id, games, changes, self._policy, receivers)
        if finding is not None:
            await raise_alert(work, finding)

    async def _receivers(self, work: Work, account_id: str, games: list[PlayedGame]) -> set[str]:
        """The opponents of the account's thrown losses its money flows to one way."""
        now = work.clock.now()
        mine = [g for g in games if g.account_id == account_id]
        transfers = [
            transfer
            for opponent in sorted({g.opponent for g in thrown(mine, self._policy.level)})
            for transfer in await work.facts.transfers_between(
                account_id, opponent, now - self._flows.window
            )
        ]
        return domain.receivers(account_id, transfers, now, self._policy, self._flows)

    async def win_trading(self, work: Work, first: str, second: str) -> None:
        since = work.clock.now() - self._policy.window
        facts = ResultFacts(work.session)
        results = await facts.pair_results(first, second, since)
        winners = {r.winner for r in results}
        if len(results) < self._policy.min_thrown or len(winners) < 2:
            return  # too few sessions, or one way only (chip dumping's): nothing to trade
        games = [
            *await facts.played_games(first, since),
            *await facts.played_games(second, since),
        ]
        finding = domain.assess_win_trading(first, second, results, self._policy, games)
        if finding is not None:
            await raise_alert(work, finding)
