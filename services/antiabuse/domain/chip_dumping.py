"""Chip dumping (deliberate money transfer): one pair's money flowing one way, game after game.

From the wallet's settlements, the money each game moved from its loser to its
winner. Over ``window``, a pair is a finding when at least ``min_games`` settled
games between them moved at least ``min_net_minor`` net in one currency, and at
least ``min_one_way_share`` of the pair's gross flow (and of the games) went
the same way. Play money is never a transfer of value and is left out.

Severity: MEDIUM on the flow alone (a strong player beating a weak one looks
like this too), HIGH when every game went the same way and the flow is at least
twice the thresholds, CRITICAL when the pair is also linked as one person
(multi-accounting). Seam for the analysis-based evidence (a loser playing far
below their level, hopeless doubles taken, easy takes passed, early
resignations in good positions): ``corroboration``, evidence a later detector
supplies per game, is added to the finding and lifts MEDIUM to HIGH; until the
analysis consumer exists nothing supplies it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair

PLAY_MONEY = "PLAY"


@dataclass(frozen=True)
class Transfer:
    """What one settled game moved from its loser to its winner."""

    settlement_id: str
    game_id: str
    loser: str
    winner: str
    amount_minor: int
    currency: str
    at: datetime


@dataclass(frozen=True)
class FlowPolicy:
    window: timedelta = timedelta(days=30)
    min_games: int = 4
    min_net_minor: int = 2000
    min_one_way_share: float = 0.9


DEFAULT_POLICY = FlowPolicy()


@dataclass(frozen=True)
class Flow:
    currency: str
    giver: str
    receiver: str
    games: tuple[str, ...]
    given: int
    returned: int
    games_given: int

    @property
    def net(self) -> int:
        return self.given - self.returned

    @property
    def share(self) -> float:
        gross = self.given + self.returned
        return self.given / gross if gross else 0.0


def flows(transfers: Sequence[Transfer], now: datetime, policy: FlowPolicy) -> list[Flow]:
    """Per currency, the pair's net flow over the window, seen from the side that gave more."""
    recent = [
        t
        for t in transfers
        if t.currency != PLAY_MONEY and t.amount_minor > 0 and now - t.at <= policy.window
    ]
    result = []
    for currency in sorted({t.currency for t in recent}):
        mine = sorted((t for t in recent if t.currency == currency), key=lambda t: t.at)
        low, high = pair(mine[0].loser, mine[0].winner)
        low_gave = sum(t.amount_minor for t in mine if t.loser == low)
        high_gave = sum(t.amount_minor for t in mine if t.loser == high)
        giver, receiver = (low, high) if low_gave >= high_gave else (high, low)
        result.append(
            Flow(
                currency=currency,
                giver=giver,
                receiver=receiver,
                games=tuple(dict.fromkeys(t.game_id for t in mine)),
                given=max(low_gave, high_gave),
                returned=min(low_gave, high_gave),
                games_given=sum(1 for t in mine if t.loser == giver),
            )
        )
    return result


def assess(
    transfers: Sequence[Transfer],
    now: datetime,
    policy: FlowPolicy = DEFAULT_POLICY,
    *,
    linked: bool = False,
    corroboration: Sequence[Evidence] = (),
) -> Finding | None:
    """The pair's finding, if any of its currencies flows one way enough."""
    suspicious = [f for f in flows(transfers, now, policy) if _one_way(f, policy)]
    if not suspicious:
        return None
    flow = max(suspicious, key=lambda f: f.net)
    evidence = [_evidence(f, policy) for f in suspicious] + list(corroboration)
    return Finding(
        detector=Detector.CHIP_DUMPING,
        subjects=pair(flow.giver, flow.receiver),
        severity=_severity(flow, policy, linked=linked, corroborated=bool(corroboration)),
        score=round(flow.share, 4),
        score_meaning=f"share of the pair's {flow.currency} flow over "
        f"{policy.window.days} days that went from {flow.giver} to {flow.receiver}",
        evidence=tuple(evidence),
    )


def _one_way(flow: Flow, policy: FlowPolicy) -> bool:
    games = len(flow.games)
    return (
        games >= policy.min_games
        and flow.net >= policy.min_net_minor
        and flow.share >= policy.min_one_way_share
        and flow.games_given >= policy.min_one_way_share * games
    )


def _severity(flow: Flow, policy: FlowPolicy, *, linked: bool, corroborated: bool) -> Severity:
    if linked:
        return Severity.CRITICAL
    overwhelming = (
        flow.returned == 0
        and len(flow.games) >= 2 * policy.min_games
        and flow.net >= 2 * policy.min_net_minor
    )
    return Severity.HIGH if overwhelming or corroborated else Severity.MEDIUM


def _evidence(flow: Flow, policy: FlowPolicy) -> Evidence:
    return Evidence(
        "one_directional_flow",
        f"{flow.giver} lost {flow.games_given} of {len(flow.games)} settled games to "
        f"{flow.receiver} in {policy.window.days} days: {flow.net} {flow.currency} minor units "
        "net went one way",
        game_ids=flow.games,
        details={
            "giver": flow.giver,
            "receiver": flow.receiver,
            "currency": flow.currency,
            "net_minor": str(flow.net),
            "given_minor": str(flow.given),
            "returned_minor": str(flow.returned),
            "games": str(len(flow.games)),
            "games_lost_by_giver": str(flow.games_given),
        },
    )
