"""Chip dumping, run after each settlement of a pair.

The pure part is :mod:`services.antiabuse.domain.chip_dumping`.

The analysis-based evidence (play far below a loser's level, hopeless doubles,
early resignations) will come from the analysis stream: its consumer passes it
as ``corroboration`` to :func:`services.antiabuse.domain.chip_dumping.assess`.
"""

from __future__ import annotations

from services.antiabuse.alerting import Work, raise_alert
from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain import chip_dumping as domain


class ChipDumping:
    def __init__(
        self, linking: MultiAccounting, policy: domain.FlowPolicy = domain.DEFAULT_POLICY
    ) -> None:
        self._linking = linking
        self._policy = policy

    async def examine(self, work: Work, first: str, second: str) -> None:
        now = work.clock.now()
        transfers = await work.facts.transfers_between(first, second, now - self._policy.window)
        linked = second in await self._linking.linked(work.facts, first)
        finding = domain.assess(transfers, now, self._policy, linked=linked)
        if finding is not None:
            await raise_alert(work, finding)
