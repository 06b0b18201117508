"""Chip dumping (deliberate money transfer): one pair's money flowing one way, game after game.

From the wallet's settlements, the money each game moved from its loser to its
winner, over ``window``, per currency (play money is never a transfer of value and
is left out). Losing is not evidence by itself: two equal players who play four
games have a one-in-eight chance that one of them wins all four. So a flow is a
finding only with evidence beyond the streak, one of:

- **chance**: the giver lost so many of the pair's games that fair play would
  produce it, or worse, with probability at most ``significance`` (the exact binomial
  tail, :mod:`.stats`), over at least ``min_games`` games and ``min_net_minor`` net:
  MEDIUM, for a person. Fair play is judged at the players' measured strengths
  (``Strengths``, below), not as a coin between equals: a flow the skill gap explains
  is no evidence of dumping;
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

**The players' measured strengths** (``Strengths``). A weak player who keeps playing a
strong friend loses most of their games and moves money one way, honestly; as a coin
between equals, such a pair crosses 0.001 (the held-out evaluation's fresh seeds: a PR 21
player against a PR 4 losing 22 of 27 games, a PR 18 against a PR 7 losing 27 of 32, four
honest friends flagged on one seed). So the chance is the binomial tail at the receiver's
chance of winning a game given what the analysis measured of both:

- the receiver's own level (:mod:`.play`: the median error per decision of their wins);
  the giver's from their games, won and lost, against anyone but the receiver (all their
  games when those are fewer than 3), thrown losses left out, never weaker than a
  beginner's (:func:`.dumping_play.giver_level`: a weak player's few wins flatter them,
  and looking weak against strangers costs real money and buys at most a beginner's
  losses); when either is unmeasured, the coin between equals (no gap is claimed that
  was not measured);
- the expected equity a game moves from the weaker to the stronger: the level gap times
  the decisions a player makes in a game (``decisions_per_game``: the median over the
  flow's analysed games, as the analysis counts them, forced plays included; a game
  resigned after three plays gives skill little time to tell);
- the receiver's win chance: ``0.5 + gap x decisions / 2``, at most 1. Why half: a game
  worth one point each way has equity ``2p - 1``, so an equity edge ``E`` is a win chance
  of ``(1 + E) / 2``; gammons and the cube make a game worth more than a point, so the
  same edge moves the win chance by less, and ``E / 2`` errs on the players' side, as
  counting forced plays among the decisions does.

A giver who measures stronger than the receiver is still judged as an equal (never below
a coin): the levels are estimates (a median of a few wins), used only to explain a flow,
never to make one more suspicious. Without analysed games the null is the coin.

**Real games** (``played_significance``). When most of the giver's losses in the flow were
played out at their own level (10 or more decisions, not far below it: :mod:`.dumping_play`,
a giver without a level judged against a beginner's), the games were real games honestly
lost, and what is left to explain them is luck and the part of the skill gap the levels
missed (a median of a few wins is noisy). The line is then 0.0001: a fair pair crosses it
within 30 games with probability 0.0005, one whose true gap of 5 PR points the levels
missed entirely (55/45) with 0.0024; at 0.001 those are 0.006 and 0.021, and a platform's
frequent pairs (friends, households, the held-out population's 18) would have one named
on a good share of months (fresh seed 880003: friends at PR 7.8 and PR 4.1, whose levels
measured a gap of 0.003 per decision, the weaker losing 20 of 23 real games). A flow of
losses that were not real games (resigned or abandoned after a few plays, thrown, never
analysed) keeps 0.001: there the play says nothing for the giver. The route stays MEDIUM.
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
    played_significance: float = 0.0001  # a flow lost in real games (module docstring)


@dataclass(frozen=True)
class Strengths:
    """What the analysis measured of a pair's play (module docstring): each player's own
    level (error per decision; None: too few wins to measure it), the decisions a player
    makes in one of the flow's games, and how many of the giver's losses in the flow were
    played out at their own level."""

    giver_level: float | None
    receiver_level: float | None
    decisions_per_game: float
    losses_played_out: int = 0

    def receiver_win_chance(self, policy: FlowPolicy) -> float:
        """The receiver's chance of winning one game at these strengths, never below a coin
        (and a coin when either level is unknown)."""
        even = 1 - policy.fair_win_chance
        if self.giver_level is None or self.receiver_level is None:
            return even
        edge = self.decisions_per_game * (self.giver_level - self.receiver_level) / 2
        return min(1.0, max(even, even + edge))

    def significance(self, flow: Flow, policy: FlowPolicy) -> float:
        """The chance route's line: stricter when most of the flow's losses were real games."""
        real = 2 * self.losses_played_out > flow.games_given
        return policy.played_significance if real else policy.significance


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

    def chance(self, policy: FlowPolicy, strengths: Strengths | None = None) -> float:
        """The chance of the giver losing this many of the games, or more, by fair play:
        between equals, or at ``strengths`` when measured."""
        lose = (
            1 - policy.fair_win_chance
            if strengths is None
            else strengths.receiver_win_chance(policy)
        )
        return binomial_tail(self.games_given, len(self.games), lose)


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
    strengths: Strengths | None = None,
) -> Finding | None:
    """The pair's finding, if any of its currencies flows one way with evidence beyond the
    streak. ``linked``: the pair is one person by strong links; ``strengths``: what the
    analysis measured of the giver's and the receiver's play (None: judged as equals)."""
    corroborated = bool(corroboration)
    suspicious = [
        f
        for f in flows(transfers, now, policy)
        if _unlikely(f, policy, strengths)
        or (_one_way(f, policy) and linked)
        or (_streak(f, policy) and corroborated)
    ]
    if not suspicious:
        return None
    flow = max(suspicious, key=lambda f: f.net)
    evidence = [_evidence(f, policy, strengths) for f in suspicious] + list(corroboration)
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


def _unlikely(flow: Flow, policy: FlowPolicy, strengths: Strengths | None = None) -> bool:
    """Enough games and money, and losses fair play would rarely produce (between equals
    when ``strengths`` is None: the widest net, what is worth reading the analysis for)."""
    line = policy.significance if strengths is None else strengths.significance(flow, policy)
    return _enough(flow, policy) and flow.chance(policy, strengths) <= line


def _severity(*, linked: bool, corroborated: bool) -> Severity:
    if linked:
        return Severity.CRITICAL
    return Severity.HIGH if corroborated else Severity.MEDIUM


def _evidence(flow: Flow, policy: FlowPolicy, strengths: Strengths | None) -> Evidence:
    measured = (
        ""
        if strengths is None
        else f", at the players' measured strengths (the receiver winning a game with "
        f"chance {strengths.receiver_win_chance(policy):.3g}) "
        f"{flow.chance(policy, strengths):.2g}"
    )
    return Evidence(
        "one_directional_flow",
        f"{flow.giver} lost {flow.games_given} of {len(flow.games)} settled games to "
        f"{flow.receiver} in {policy.window.days} days: {flow.net} {flow.currency} minor units "
        f"net went one way; fair play between equals loses that many or more with "
        f"probability {flow.chance(policy):.2g}{measured}",
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
        }
        | _strength_details(flow, policy, strengths),
    )


def _strength_details(
    flow: Flow, policy: FlowPolicy, strengths: Strengths | None
) -> dict[str, str]:
    if strengths is None:
        return {}
    return {
        "giver_level": "" if strengths.giver_level is None else f"{strengths.giver_level:.4f}",
        "receiver_level": (
            "" if strengths.receiver_level is None else f"{strengths.receiver_level:.4f}"
        ),
        "decisions_per_game": f"{strengths.decisions_per_game:g}",
        "receiver_win_chance": f"{strengths.receiver_win_chance(policy):.4f}",
        "chance_at_measured_strengths": f"{flow.chance(policy, strengths):.6g}",
        "losses_played_out": str(strengths.losses_played_out),
    }
