"""Deliberate disconnects, run when a session abandoned by a player is settled.

The pure part is :mod:`services.antiabuse.domain.deliberate_disconnect` (the binomial
test of losing stops against the base rate); the stops are the sessions
:class:`services.antiabuse.results_store.ResultFacts` recorded with a leaver and a share,
and the sessions lost on time that :class:`services.antiabuse.stops_store.StopFacts`
recorded with the timed-out player's share (running out the timer counts the same way),
and the number of sessions the player played in the window (the second route: losing
stops against the sessions played, at the player's own rate of stopping). A player with
fewer than two losing stops cannot be flagged by any route, so nothing more is read
for them; for the others, their analysed sessions' errors and their opponents' give the
strength deficit the null hypothesis is read at, and the drops of theirs that came back
within the reconnect window (:class:`services.antiabuse.reconnections_store.ReconnectionFacts`:
the third route weighs the disconnections that never came back against them, and the second
reads the rate they imply when a losing stop was a disconnection).

The test runs at each of the player's stops, and once more when their
``rate_min_sessions``-th (5th) session in the window ends (:meth:`examine_at_session_end`,
at the stricter ``early_alpha``): the rate and walked routes judge nobody before it, and a
player whose losing stops all came before it and who never stops again was otherwise never
judged (a walker that walked from 2 or 3 of its first 4 sessions and then finished its
games).
"""

from __future__ import annotations

from dataclasses import replace

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.domain import deliberate_disconnect as domain
from services.antiabuse.reconnections_store import ReconnectionFacts
from services.antiabuse.results_store import ResultFacts
from services.antiabuse.stops_store import StopFacts


class DeliberateDisconnect:
    def __init__(self, policy: domain.DisconnectPolicy = domain.DEFAULT_POLICY) -> None:
        self._policy = policy

    async def examine(self, work: Work, account_id: str) -> None:
        """At a stop of the player's (a disconnection settled, a timeout valued)."""
        await self._examine(work, account_id, at_session_end=False)

    async def examine_at_session_end(self, work: Work, account_id: str) -> None:
        """At the end of a session the player did not stop: judged only when it is their
        ``rate_min_sessions``-th in the window (the first the rate routes may judge)."""
        await self._examine(work, account_id, at_session_end=True)

    async def _examine(self, work: Work, account_id: str, at_session_end: bool) -> None:
        since = work.clock.now() - self._policy.window
        results = ResultFacts(work.session)
        stops = await results.stops(account_id, since)
        stops += await StopFacts(work.session).timeouts(account_id, since)
        losing = sum(1 for s in stops if domain.losing(s, self._policy))
        if losing < min(self._policy.min_losing, self._policy.min_losing_rate):
            return  # neither route can alert
        sessions = await results.sessions_played(account_id, since)
        policy = self._policy
        if at_session_end:
            if sessions != policy.rate_min_sessions:
                return  # judged at each stop from this session on; before it, by nothing
            policy = replace(policy, rate_alpha=policy.early_alpha)  # the early stops' level
        games = await results.played_games(account_id, since)
        errors = await results.errors((g.opponent for g in games), since)
        deficit = domain.strength_deficit(
            [g.error_per_decision for g in games],
            [errors.get(g.opponent, []) for g in games],
            policy,
        )
        returned = await ReconnectionFacts(work.session).came_back(account_id, since)
        finding = domain.assess(account_id, stops, policy, sessions, deficit, returned)
        if finding is not None:
            await raise_alert(work, finding)
