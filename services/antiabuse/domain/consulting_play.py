"""Consulting during play: linked accounts at different tables at once, one playing
better while the other idles. The chat half of consulting is in :mod:`.chat_abuse`.

Pure. Input: for a *helped* player and a *helper* (an account the multi-accounting
graph links to it), their game windows (each game of a session: started, ended)
and their analysed decisions, each tagged with its game. A helped player's game
*overlaps* when one of the helper's games (at another table: another session) was
running at the same time.

**Test.** The helped player's counted decisions in overlapping games against those
in the other games (the baseline): ``z = (mean_base - mean_overlap) / (s sqrt(1/n_base
+ 1/n_overlap))``, ``s`` the baseline's sample sd (at least ``min_sd``), one-sided
(positive: fewer errors while the helper was seated elsewhere). It needs
``min_overlap`` overlapping and ``min_base`` baseline decisions.

**Idle.** The helper's median think time per decision in the overlapping games
against the helper's median elsewhere; at ``idle_ratio`` (1.5) the helper was
spending time somewhere else while seated.

**Verdict.** MEDIUM at z >= 3; HIGH at z >= 4.75, or at z >= 3 with an idle helper.
Subjects: the pair. Score: z, in sigma.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from services.antiabuse.domain.assistance import mean, median, sd
from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair

GameKey = tuple[str, int]  # (session id, game number)


@dataclass(frozen=True)
class Window:
    """One game of a session, from its start to its end."""

    game_id: str
    game_number: int
    started_at: datetime
    ended_at: datetime


@dataclass(frozen=True)
class Played:
    """One analysed decision, tagged with its game."""

    game_id: str
    game_number: int
    counted: bool
    error: float
    seconds: float | None


@dataclass(frozen=True)
class OverlapPolicy:
    min_overlap: int = 30
    min_base: int = 60
    min_sd: float = 0.005
    idle_ratio: float = 1.5
    alert_sigma: float = 3.0
    high_sigma: float = 4.75


DEFAULT_POLICY = OverlapPolicy()


def overlapping(own: Sequence[Window], other: Sequence[Window]) -> set[GameKey]:
    """``own``'s games that ran while one of ``other``'s, in another session, did."""
    return {
        (mine.game_id, mine.game_number)
        for mine in own
        for theirs in other
        if theirs.game_id != mine.game_id
        and mine.started_at < theirs.ended_at
        and theirs.started_at < mine.ended_at
    }


def idle_ratio(helper: Sequence[Played], during: set[GameKey]) -> float | None:
    """The helper's median seconds a decision in ``during`` over its median elsewhere."""
    inside = [
        p.seconds for p in helper if p.seconds is not None and (p.game_id, p.game_number) in during
    ]
    outside = [
        p.seconds
        for p in helper
        if p.seconds is not None and (p.game_id, p.game_number) not in during
    ]
    busy, usual = median(inside), median(outside)
    if busy is None or usual is None or usual <= 0:
        return None
    return busy / usual


@dataclass(frozen=True)
class Improvement:
    overlap: int
    base: int
    overlap_mean: float
    base_mean: float
    z: float


def improvement(
    played: Sequence[Played], during: set[GameKey], policy: OverlapPolicy = DEFAULT_POLICY
) -> Improvement | None:
    """The helped player's error per decision while overlapping against the baseline."""
    counted = [p for p in played if p.counted]
    inside = [p.error for p in counted if (p.game_id, p.game_number) in during]
    outside = [p.error for p in counted if (p.game_id, p.game_number) not in during]
    if len(inside) < policy.min_overlap or len(outside) < policy.min_base:
        return None
    spread = max(sd(outside), policy.min_sd)
    z = (mean(outside) - mean(inside)) / (spread * math.sqrt(1 / len(outside) + 1 / len(inside)))
    return Improvement(len(inside), len(outside), mean(inside), mean(outside), z)


def assess(
    helped: str,
    helper: str,
    helped_windows: Sequence[Window],
    helped_play: Sequence[Played],
    helper_windows: Sequence[Window],
    helper_play: Sequence[Played],
    policy: OverlapPolicy = DEFAULT_POLICY,
) -> Finding | None:
    """``helped`` playing better while ``helper`` sat at another table, or None."""
    during = overlapping(helped_windows, helper_windows)
    found = improvement(helped_play, during, policy)
    if found is None or found.z < policy.alert_sigma:
        return None
    helper_during = overlapping(helper_windows, helped_windows)
    idle = idle_ratio(helper_play, helper_during)
    idle_helper = idle is not None and idle >= policy.idle_ratio
    high = found.z >= policy.high_sigma or idle_helper
    evidence = [
        Evidence(
            kind="better_while_linked_account_seated",
            description=f"{helped} played better while the linked {helper} sat at another table",
            game_ids=tuple(sorted({key[0] for key in during})),
            details={
                "helped": helped,
                "helper": helper,
                "decisions_overlapping": str(found.overlap),
                "decisions_baseline": str(found.base),
                "error_overlapping": f"{found.overlap_mean:.5f}",
                "error_baseline": f"{found.base_mean:.5f}",
                "z": f"{found.z:.2f}",
            },
        )
    ]
    if idle is not None:
        evidence.append(
            Evidence(
                kind="linked_account_idle",
                description="the linked account's think time a decision at its own table "
                "then, against its usual",
                game_ids=tuple(sorted({key[0] for key in helper_during})),
                details={"account": helper, "think_time_ratio": f"{idle:.2f}"},
            )
        )
    return Finding(
        detector=Detector.CONSULTING,
        subjects=pair(helped, helper),
        severity=Severity.HIGH if high else Severity.MEDIUM,
        score=round(found.z, 2),
        score_meaning=(
            "sigma: one-sided z that the player's error per decision was lower while a linked "
            "account sat at another table than otherwise; alert at 3, HIGH at 4.75 or with "
            "the linked account idle (1.5 times its usual think time)"
        ),
        evidence=tuple(evidence),
    )
