"""Deliberate disconnects (pure): the sessions a player abandoned, and whether chance explains
how often they were losing when they did.

The game service settles every abandoned session by analysis: when the reconnect
window closes, ``GameEnded`` (a money game) or ``MatchEnded`` (a match) carries each
side's share of the stake, from the cubeful equity where play stopped (money: ``(1 +
E/3) / 2``; a match: the match-winning chance). A stop is **losing** when the
leaver's share is at most ``losing_share`` (0.4: money equity -0.6 per cube or worse;
a match: 40% or less to win it). Stops settled by the even split (analysis
unreachable, ``analysed`` false) say nothing and are left out.

Null hypothesis: an honest player's connection drops at moments that have nothing to
do with the position, so each stop is losing with the chance ``base_rate`` that a
player is that far behind at a random moment of play. ``base_rate`` (0.35) is set on
the high side of that chance (two equal players are each behind by that much well
under half the time; see the README), which makes the test conservative for weaker
players too. Of ``n`` analysed stops, ``k`` losing: the p-value is the binomial tail
P(X >= k), X ~ Binomial(n, base_rate). A finding needs at least ``min_losing``
losing stops in distinct sessions and p <= ``alpha`` (MEDIUM) or <= ``strong_alpha``
(HIGH). One dropped connection, or a few, is never enough.

Running out the timer counts the same way ("disconnections and timeouts concentrated in
positions that were losing"): a session lost on time is a stop too, its share the one
the game service's ``StopValued`` gives the position where the clock ran out. An honest
player's clock runs out when their connection or attention goes, at moments as unrelated
to the position as a dropped connection, so the same base rate holds; the two are tested
together, so a player who alternates between them is judged on all their stops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity
from services.antiabuse.domain.stats import binomial_tail

DISCONNECTION = "disconnection"
TIMEOUT = "timeout"


@dataclass(frozen=True)
class Stop:
    """A session that ended because ``account_id`` did not come back (settled by analysis),
    or let their clock run out (valued by analysis after the forfeit): ``how``."""

    game_id: str
    account_id: str
    share: float
    at: datetime
    how: str = DISCONNECTION


@dataclass(frozen=True)
class DisconnectPolicy:
    window: timedelta = timedelta(days=90)
    losing_share: float = 0.4
    base_rate: float = 0.35
    min_losing: int = 4
    alpha: float = 0.01
    strong_alpha: float = 0.0001


DEFAULT_POLICY = DisconnectPolicy()


def losing(stop: Stop, policy: DisconnectPolicy = DEFAULT_POLICY) -> bool:
    return stop.share <= policy.losing_share


def p_value(stops: Sequence[Stop], policy: DisconnectPolicy = DEFAULT_POLICY) -> float:
    """The chance of at least this many losing stops among these if timing were random."""
    k = sum(1 for s in stops if losing(s, policy))
    return binomial_tail(k, len(stops), policy.base_rate)


def assess(
    account_id: str, stops: Sequence[Stop], policy: DisconnectPolicy = DEFAULT_POLICY
) -> Finding | None:
    """The account's finding, if its abandoned sessions were losing beyond chance."""
    mine = list({s.game_id: s for s in stops if s.account_id == account_id}.values())
    bad = sorted((s for s in mine if losing(s, policy)), key=lambda s: s.at)
    if len(bad) < policy.min_losing:
        return None
    chance = p_value(mine, policy)
    if chance > policy.alpha:
        return None
    return Finding(
        detector=Detector.DELIBERATE_DISCONNECT,
        subjects=(account_id,),
        severity=Severity.HIGH if chance <= policy.strong_alpha else Severity.MEDIUM,
        score=float(f"{chance:.3g}"),
        score_meaning=f"chance that {len(bad)} or more of {len(mine)} abandoned sessions "
        f"in {policy.window.days} days were losing (share <= {policy.losing_share}) "
        f"if the disconnections fell at random moments (base rate {policy.base_rate})",
        evidence=(
            Evidence(
                "disconnected_when_losing",
                f"{len(bad)} of {len(mine)} sessions abandoned until the reconnect window "
                "closed or lost on time were losing by the analysis of where play stopped",
                game_ids=tuple(s.game_id for s in bad),
                details={
                    "abandoned": str(len(mine)),
                    "losing": str(len(bad)),
                    "losing_timeouts": str(sum(1 for s in bad if s.how == TIMEOUT)),
                    "shares": ",".join(f"{s.share:.4f}" for s in bad),
                    "base_rate": str(policy.base_rate),
                    "p_value": f"{chance:.3g}",
                },
            ),
        ),
    )
