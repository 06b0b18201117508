"""Chip dumping, run after each settlement of a pair.

The pure part is :mod:`services.antiabuse.domain.chip_dumping`.

The analysis-based evidence (the giver's losses to the receiver played far below
their own level, hopeless doubles taken, easy takes passed, resignations in good
positions) is
:func:`services.antiabuse.domain.dumping_play.corroboration` over the giver's
analysed sessions (:class:`services.antiabuse.results_store.ResultFacts`) and valued
resignations (:class:`services.antiabuse.stops_store.StopFacts`), passed as
``corroboration`` to :func:`services.antiabuse.domain.chip_dumping.assess`; both
players' analysed sessions give their measured strengths
(:func:`services.antiabuse.domain.dumping_play.strengths`), at which the chance route
judges the flow. The
consumer examines a pair again when an analysis, a result or a resignation's
valuation of theirs arrives, so
the evidence counts whichever stream delivers last.
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain import chip_dumping as domain
from services.antiabuse.domain import dumping_play
from services.antiabuse.results_store import ResultFacts
from services.antiabuse.stops_store import StopFacts


class ChipDumping:
    def __init__(
        self, linking: MultiAccounting, policy: domain.FlowPolicy = domain.DEFAULT_POLICY
    ) -> None:
        self._linking = linking
        self._policy = policy

    async def examine(self, work: Work, first: str, second: str) -> None:
        now = work.clock.now()
        transfers = await work.facts.transfers_between(first, second, now - self._policy.window)
        flow = domain.examinable(transfers, now, self._policy)
        if flow is None:
            return  # most pairs: no one-way flow, so no linking or analysis to read
        giver, receiver = flow.giver, flow.receiver
        linked = second in await self._linking.one_person(work.facts, first)
        since = now - self._policy.window
        results = ResultFacts(work.session)
        games = await results.played_games(giver, since)
        resigned = await StopFacts(work.session).resignations(giver, receiver, since)
        corroboration = dumping_play.corroboration(giver, receiver, games, resignations=resigned)
        strengths = dumping_play.strengths(
            giver, receiver, games, await results.played_games(receiver, since), flow.games
        )
        finding = domain.assess(
            transfers,
            now,
            self._policy,
            linked=linked,
            corroboration=corroboration,
            strengths=strengths,
        )
        if finding is not None:
            await raise_alert(work, finding)
