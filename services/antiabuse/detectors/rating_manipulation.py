"""Intentional losing and rating manipulation, run when a session's result, its analysis or a
rating change arrives.

The pure part is :mod:`services.antiabuse.domain.rating_manipulation`: thrown losses
(with sandbagging as evidence) per account, win trading per pair. Facts come from
:class:`services.antiabuse.results_store.ResultFacts`.
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.domain import rating_manipulation as domain
from services.antiabuse.results_store import ResultFacts


class RatingManipulation:
    def __init__(self, policy: domain.RatingPolicy = domain.DEFAULT_POLICY) -> None:
        self._policy = policy

    async def thrown(self, work: Work, account_id: str) -> None:
        facts = ResultFacts(work.session)
        since = work.clock.now() - self._policy.window
        games = await facts.played_games(account_id, since)
        if domain.assess_thrown(account_id, games, [], self._policy) is None:
            return  # no thrown losses: the ratings cannot make a finding
        changes = await facts.rating_changes(account_id, since)
        finding = domain.assess_thrown(account_id, games, changes, self._policy)
        if finding is not None:
            await raise_alert(work, finding)

    async def win_trading(self, work: Work, first: str, second: str) -> None:
        since = work.clock.now() - self._policy.window
        results = await ResultFacts(work.session).pair_results(first, second, since)
        finding = domain.assess_win_trading(first, second, results, self._policy)
        if finding is not None:
            await raise_alert(work, finding)
