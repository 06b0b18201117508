"""Deliberate disconnects, run when a session abandoned by a player is settled.

The pure part is :mod:`services.antiabuse.domain.deliberate_disconnect` (the binomial
test of losing stops against the base rate); the stops are the sessions
:class:`services.antiabuse.results_store.ResultFacts` recorded with a leaver and a share,
and the sessions lost on time that :class:`services.antiabuse.stops_store.StopFacts`
recorded with the timed-out player's share (running out the timer counts the same way),
and the number of sessions the player played in the window (the second route: losing
stops against the sessions played, at the player's own rate of stopping).
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.domain import deliberate_disconnect as domain
from services.antiabuse.results_store import ResultFacts
from services.antiabuse.stops_store import StopFacts


class DeliberateDisconnect:
    def __init__(self, policy: domain.DisconnectPolicy = domain.DEFAULT_POLICY) -> None:
        self._policy = policy

    async def examine(self, work: Work, account_id: str) -> None:
        since = work.clock.now() - self._policy.window
        results = ResultFacts(work.session)
        stops = await results.stops(account_id, since)
        stops += await StopFacts(work.session).timeouts(account_id, since)
        sessions = await results.sessions_played(account_id, since)
        finding = domain.assess(account_id, stops, self._policy, sessions)
        if finding is not None:
            await raise_alert(work, finding)
