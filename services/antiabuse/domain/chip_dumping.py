"""Chip dumping (deliberate money transfer): one pair's money flowing one way, game after game.

From the wallet's settlements, the money each game moved from its loser to its
winner, over ``window``, per currency (play money is never a transfer of value and
is left out). Losing is not evidence by itself: two equal players who play four
games have a one-in-eight chance that one of them wins all four. So a flow is a
finding only with evidence beyond the streak, one of:

- **chance**: the giver lost so many of the pair's games that fair play between
  equals (each game a coin, ``fair_win_chance`` 0.5) would produce it, or worse, with
  probability at most ``significance`` (the exact binomial tail, :mod:`.stats`), over
  at least ``min_games`` games and ``min_net_minor`` net: MEDIUM, for a person (a
  strong player beating a weak one also loses the coin's bet);
- **the giver's play** (``corroboration``, :mod:`.dumping_play`: losses far below their
  own level, hopeless doubles taken, easy takes passed, resignations in good
  positions) on a flow of at least ``min_games`` games and ``min_one_way_share`` of
  the flow and of the games one way, whatever its amount: HIGH. The ``min_net_minor``
  floor is there for the routes whose evidence is the streak (a small streak is
  chance, and not worth a person's time); here the evidence is the giver's own play
  in at least two of those games, which is as strong for $14 as for $140. The
  held-out population's dumpers with 4 thrown games at the smallest stakes moved $14
  and $17 on fresh seeds and were missed by the floor alone;
- **one person** (``linked``: a path of strong links, :mod:`.link_strength`) on such a
  one-way flow: CRITICAL, whatever the chance: between one person's accounts a
  one-way flow is a transfer, not luck. A shared address or network is not one person
  and never makes a flow CRITICAL.

Why ``significance`` 0.001 (the smallest count that reaches it alone is 10 straight
losses, 2^-10 = 0.00098): the pair is tested again after each of its settlements,
so a rule is judged by the chance a fair pair *ever* crosses it. Counting every game
of the pair (no window), two equal players cross 0.001 with probability 0.002 over 10
games, 0.006 over 30, 0.009 over 50 (0.01 would be 0.016, 0.056, 0.074: one pair of
friends in 14 over a busy month). A 60/40 skill gap crosses it with probability 0.034
over 30 games, 70/30 with 0.21: the flow alone stays MEDIUM for that reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair
from services.antiabuse.domain.stats import binomial_tail

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
    fair_win_chance: float = 0.5
    significance: float = 0.001


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

    def chance(self, policy: FlowPolicy) -> float:
        """The chance of the giver losing this many of the games, or more, by fair play."""
        return binomial_tail(self.games_given, len(self.games), 1 - policy.fair_win_chance)


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


def examinable(transfers: Sequence[Transfer], now: datetime, policy: FlowPolicy) -> Flow | None:
    """The largest flow that further evidence could make a finding (None: nothing to read)."""
    candidates = [
        f for f in flows(transfers, now, policy) if _streak(f, policy) or _unlikely(f, policy)
    ]
    return max(candidates, key=lambda f: f.net) if candidates else None


def assess(
    transfers: Sequence[Transfer],
    now: datetime,
    policy: FlowPolicy = DEFAULT_POLICY,
    *,
    linked: bool = False,
    corroboration: Sequence[Evidence] = (),
) -> Finding | None:
    """The pair's finding, if any of its currencies flows one way with evidence beyond the
    streak. ``linked``: the pair is one person by strong links."""
    corroborated = bool(corroboration)
    suspicious = [
        f
        for f in flows(transfers, now, policy)
        if _unlikely(f, policy)
        or (_one_way(f, policy) and linked)
        or (_streak(f, policy) and corroborated)
    ]
    if not suspicious:
        return None
    flow = max(suspicious, key=lambda f: f.net)
    evidence = [_evidence(f, policy) for f in suspicious] + list(corroboration)
    return Finding(
        detector=Detector.CHIP_DUMPING,
        subjects=pair(flow.giver, flow.receiver),
        # One person makes it CRITICAL (a freeze) only on a flow over the money floor.
        severity=_severity(
            linked=linked and any(_enough(f, policy) for f in suspicious),
            corroborated=corroborated,
        ),
        score=round(flow.share, 4),
        score_meaning=f"share of the pair's {flow.currency} flow over "
        f"{policy.window.days} days that went from {flow.giver} to {flow.receiver}",
        evidence=tuple(evidence),
    )


def _enough(flow: Flow, policy: FlowPolicy) -> bool:
    return len(flow.games) >= policy.min_games and flow.net >= policy.min_net_minor


def one_way(flow: Flow, policy: FlowPolicy) -> bool:
    """Nearly all of the flow's money and games went one way, however few and small."""
    return (
        flow.share >= policy.min_one_way_share
        and flow.games_given >= policy.min_one_way_share * len(flow.games)
    )


def _one_way(flow: Flow, policy: FlowPolicy) -> bool:
    """The streak: enough games and money, nearly all one way (not evidence by itself)."""
    return _enough(flow, policy) and one_way(flow, policy)


def _streak(flow: Flow, policy: FlowPolicy) -> bool:
    """``min_games`` games or more, nearly all one way, whatever the amount: what the
    giver's play can corroborate."""
    return len(flow.games) >= policy.min_games and one_way(flow, policy)


def _unlikely(flow: Flow, policy: FlowPolicy) -> bool:
    """Enough games and money, and losses fair play would rarely produce."""
    return _enough(flow, policy) and flow.chance(policy) <= policy.significance


def _severity(*, linked: bool, corroborated: bool) -> Severity:
    if linked:
        return Severity.CRITICAL
    return Severity.HIGH if corroborated else Severity.MEDIUM


def _evidence(flow: Flow, policy: FlowPolicy) -> Evidence:
    return Evidence(
        "one_directional_flow",
        f"{flow.giver} lost {flow.games_given} of {len(flow.games)} settled games to "
        f"{flow.receiver} in {policy.window.days} days: {flow.net} {flow.currency} minor units "
        f"net went one way; fair play between equals loses that many or more with "
        f"probability {flow.chance(policy):.2g}",
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
            "chance_under_fair_play": f"{flow.chance(policy):.6g}",
        },
    )
