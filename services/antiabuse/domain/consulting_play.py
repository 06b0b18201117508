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

**Verdict.** MEDIUM at z >= 3; HIGH at z >= 4.75, or at z >= 3 with an idle helper
(ratio 1.5).
Subjects: the pair. Score: z, in sigma.

**One person at two tables (strong links).** The z-test needs 30 overlapping and 60
baseline decisions and compares means of a heavy-tailed error (most decisions 0, a few
large), so a consultant who plays 3 to 10 sessions at two tables and 2 to 6 alone rarely
reaches 3 sigma (2 of 8 pairs in the held-out evaluation). When the two accounts are
one person by a strong link (a device, a mailbox, a payment instrument: the
multi-accounting graph's ``one_person``), that link and the games at two tables at once
are already evidence of one person playing both, and the question left is only whether
the helped account played better then. Asked per decision: a *miss* is a counted
decision more than ``best_within`` (0.001) from the best play; a consulted account
plays the engine's choice (misses only when it takes the second best on purpose), a
person misses on a share of decisions that their own games measure (40 to 60 % for
a club player, 15 to 25 % for an expert). The one-sided Fisher exact test (the
hypergeometric tail, :func:`services.antiabuse.domain.stats.hypergeometric_low_tail`)
of so few misses among the overlapping decisions, given the player's misses over all
their decisions, needs no model of the player's error: under "the overlap changes
nothing" the overlapping decisions are a random draw of all of them. With 50 decisions
each side it takes an expert from 30 % misses to 4 % to reach p = 0.001; a club player
reaches 1e-9. Alert at p <= ``person_alpha`` (0.001): the test is asked again after
each analysis of either account and for each linked account, so the level is low; a
strong link between strangers (an internet café's shared computer) comes with
overlaps at random and the same play, and stays far from it (the evaluation's café
pairs: p >= 0.09). MEDIUM; HIGH at p <= ``person_high`` (1e-6) or with an idle helper.

*Games set aside.* The overlap is known only by game windows, and not every
overlapping game is a consulted one: a person may open a third table on the helped
account, or consult on some games and not others, and one such game played unaided (at
the player's usual 25 to 40 % misses) pooled with the consulted ones hides them (on two
unseen held-out seeds a consultant's own game overlapping a consulted one by a minute
took its p-value from about 1e-7, that game aside, to 0.008 and 0.011). So the test is
asked of every overlapping game together and, when there are two or more, with each one
in turn counted with the player's other games (up to ``person_set_aside``, 1, at a
time), and the smallest p-value is multiplied by the number of splits asked (n + 1 for
n overlapping games): each split's p-value is exact under "the overlap changes
nothing", so by the Bonferroni bound the chance that the smallest is as small is at
most their sum. A split leaving fewer than ``person_overlap`` decisions is not asked
(the counts decide that, not the misses). It costs a pair with one overlapping game
nothing (one split), a pair with n the factor n + 1 (0.001 then needs about 1e-4 for
ten games).

*The idle other account as a second sign.* A world-class player misses the best play on
15 to 25 % of decisions, so with a few of their own games the test cannot reach 0.001
(57 decisions alone, 3 misses in 82 at two tables: p = 0.0069). The person's other
account, meanwhile, is played by someone whose attention is at the consulted table: its
think times then run slow. That is a sign independent of the helped account's misses
(another account's clock, not its plays), so a looser line holds with it: p <=
``idle_alpha`` (0.05) when the other account's think times in the overlapping games are
slower than its usual by ``idle_ratio`` (1.5) against its own other games, or by
``idle_ratio_other`` (2) against the helped account's pace when it has none (the
fallback assumes one person; two people's paces differ, by 1.5 times for a quarter of
honest pairs and 2 times for an eighth), and not by the chance of a few decisions (the
one-sided rank-sum z >= ``idle_z``, 3.09, with ``idle_min`` think times a side). An honest
pair passes only by both chances at once: at most 0.05 times 0.001 with its own pace,
0.05 times about 0.13 (0.0065) when the other account only ever plays beside this one
and is a slower person (a spouse sharing a card, playing the same evenings). Such an
alert is MEDIUM (the idle helper is the sign it needed, not a HIGH's second one).

*So few misses that no person makes them, as the other second sign.* When the helped
account has few decisions of its own, its level is uncertain and the test cannot reach
0.001 (21 decisions alone, 5 misses, against 4 of 109 at two tables: 0.034 on an
unseen seed). The level cannot be borrowed from the other account (a strong link is
not always one person: a café's computer, a spouse's card; a household of a PR 5 and a
PR 22 player, taken as one person, reached 0.00053 so, whatever the helped one's play).
What is known without the other account is how few misses a person makes at all: 15 %
of decisions for the best (``floor_share``; experts miss 15 to 25 %, and of 1,971
honest players of four design seeds with 60 decisions or more one stayed under it, at
0.137). So the overlapping misses are also asked against that floor (the binomial low
tail, :func:`services.antiabuse.domain.stats.binomial_low_tail`, over the same splits
and times their number), and p <= ``idle_alpha`` with the floor's p-value at or under
``person_alpha`` alerts (MEDIUM). For any player at or above the floor that is at most
0.001 whatever the other account is; a player better than the floor is still held by
their own games' 0.05.

The idle helper's usual pace, when it has no games of its own outside the overlap, is
the person's at the other account (one person: one pace), so the helper that only ever
plays while consulting is still measured. A weaker link (an address, a network) is
strangers or a household as often as one person: those pairs keep the z-test alone.

*The population's slowest, for an other account with no games of its own.* The 2 times
against the person's pace assumes one pace for two accounts; a person's second account
need not keep it (on tuning seeds three world-class consultants with 3 or 4 games at two
tables were 1.4 to 1.8 times the person's pace, and slower than 98 % of all accounts).
So the other account's pace then (:func:`account_pace`: the mean log think time of its
counted decisions, ``pace_min`` of them) is also placed among the population's
(:class:`PacePopulation`): as slow as at most ``pace_share`` (5 %) of the accounts is the
idle sign. An honest account is among the slowest 5 % with chance 0.05 whoever it is
linked to, so an honest pair passes p <= 0.05 and that only by two chances at once
(0.0025); an other account with games of its own is held to its own pace instead (a
person slow everywhere is no sign).

*Games against each other* are left out of both accounts' play: a game the two played
against each other is neither's usual play, and where a dump giver throws games (counted
as the giver's level, they made its overlap look better).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import combinations
from statistics import NormalDist

from services.antiabuse.domain.assistance import mean, median, sd
from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity, pair
from services.antiabuse.domain.stats import (
    binomial_low_tail,
    hypergeometric_low_tail,
    rank_sum_z,
)

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
    best_within: float = 0.001  # a decision this close to the best play is not a miss
    person_overlap: int = 20  # the one-person test's minimum decisions, overlapping
    person_base: int = 20  # and in the player's other games
    person_alpha: float = 0.001
    person_high: float = 1e-6
    person_set_aside: int = 1  # overlapping games the test may count as the player's own
    idle_alpha: float = 0.05  # the one-person test's line when the other account idled
    idle_z: float = 3.09  # its think times slower then: one-sided rank-sum, p <= 0.001
    idle_ratio_other: float = 2.0  # the ratio needed against the other account's pace
    idle_min: int = 10  # think times a side for the rank-sum's normal approximation
    floor_share: float = 0.15  # the fewest misses a decision a person plays at (experts 15-25 %)
    pace_share: float = 0.05  # the population's slowest share the other account's pace is in
    pace_min: int = 20  # its counted think times then, and a population account's, for a pace


DEFAULT_POLICY = OverlapPolicy()

PACE_STEP = 0.05  # a bucket of the population's paces: 5 % of a think time (natural log)
PACE_ACCOUNTS = 100  # accounts with a pace before the population's slowest share means much


def log_seconds(seconds: float) -> float:
    """A think time's natural log (0.1 s at least: an instant move has a pace too)."""
    return math.log(max(seconds, 0.1))


def account_pace(played: Sequence[Played], least: int) -> float | None:
    """The mean log think time of the counted decisions (unforced plays and cube actions:
    a forced move's pace is a setting, not a person's), or None under ``least`` of them."""
    logs = [log_seconds(p.seconds) for p in played if p.counted and p.seconds is not None]
    return mean(logs) if len(logs) >= least else None


@dataclass(frozen=True)
class PacePopulation:
    """The accounts' paces (:func:`account_pace` over all their games), counted per bucket
    of ``PACE_STEP``: bucket ``floor(pace / PACE_STEP)`` -> accounts."""

    buckets: Mapping[int, int]

    def slower_share(self, pace: float) -> float | None:
        """The share of accounts at least as slow as ``pace`` (its own bucket counted whole:
        a share never smaller than the exact one), or None with under ``PACE_ACCOUNTS``."""
        total = sum(self.buckets.values())
        if total < PACE_ACCOUNTS:
            return None
        at = math.floor(pace / PACE_STEP)
        return sum(n for bucket, n in self.buckets.items() if bucket >= at) / total


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


@dataclass(frozen=True)
class Idle:
    """The helper's think time a decision while seated at the other table against its
    usual: the ratio of medians, the one-sided rank-sum z (slower then) when both sides
    hold ``idle_min`` think times, and whether the usual is the helper's own games'."""

    ratio: float
    z: float | None
    own_pace: bool
    slower_share: float | None = None  # the population's accounts at least as slow

    def shown(self, policy: OverlapPolicy) -> bool:
        """Idle beyond its pace's chance: slower by ``idle_ratio`` against its own games
        (``idle_ratio_other`` against the other account's: two people's paces differ) and
        not by the chance of a few decisions (rank-sum z >= ``idle_z``); or, with no games
        of its own, as slow as the population's slowest ``pace_share`` of accounts."""
        line = policy.idle_ratio if self.own_pace else policy.idle_ratio_other
        if self.ratio >= line and self.z is not None and self.z >= policy.idle_z:
            return True
        return (
            not self.own_pace
            and self.slower_share is not None
            and self.slower_share <= policy.pace_share
        )


def idle(
    helper: Sequence[Played],
    during: set[GameKey],
    usual_pace: Sequence[float] = (),
    policy: OverlapPolicy = DEFAULT_POLICY,
    paces: PacePopulation | None = None,
) -> Idle | None:
    """The helper's think times in ``during`` against those of its other games (against
    ``usual_pace`` when it has none, and then its pace against the population's,
    ``paces``), or None when either side has none."""
    inside = [
        p.seconds for p in helper if p.seconds is not None and (p.game_id, p.game_number) in during
    ]
    outside = [
        p.seconds
        for p in helper
        if p.seconds is not None and (p.game_id, p.game_number) not in during
    ]
    usual = outside or list(usual_pace)
    busy, typical = median(inside), median(usual)
    if busy is None or typical is None or typical <= 0:
        return None
    enough = min(len(inside), len(usual)) >= policy.idle_min
    z = rank_sum_z(inside, usual) if enough else None
    share = None
    if not outside and paces is not None:
        pace = account_pace(
            [p for p in helper if (p.game_id, p.game_number) in during], policy.pace_min
        )
        share = None if pace is None else paces.slower_share(pace)
    return Idle(busy / typical, z, bool(outside), share)


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


@dataclass(frozen=True)
class Misses:
    """The one-person test: misses among the overlapping and the other decisions, with
    the overlapping games set aside (counted with the other games) and the number of
    splits the p-value was corrected for (its Bonferroni factor)."""

    overlap: int
    overlap_misses: int
    base: int
    base_misses: int
    p: float
    set_aside: tuple[str, ...] = ()
    splits: int = 1
    floor_p: float = 1.0  # so few overlapping misses at a human's fewest, corrected alike


def misses(
    played: Sequence[Played], during: set[GameKey], policy: OverlapPolicy = DEFAULT_POLICY
) -> Misses | None:
    """Few misses (decisions off the best play) while overlapping, against the player's
    other games: the one-sided Fisher exact p-value, asked of every overlapping game
    together and with up to ``policy.person_set_aside`` of them counted as the player's
    own (each choice of games one split); the smallest p-value times the number of splits
    asked (the Bonferroni bound: under "the overlap changes nothing" each split's p-value
    is exact, so the chance that any of them is as small is at most their sum)."""
    counted = [p for p in played if p.counted]
    games: dict[GameKey, list[bool]] = {}
    for p in counted:
        key = (p.game_id, p.game_number)
        if key in during:
            games.setdefault(key, []).append(p.error > policy.best_within)
    overlap = sum(len(m) for m in games.values())
    if overlap < policy.person_overlap or len(counted) - overlap < policy.person_base:
        return None
    total, missed = len(counted), sum(p.error > policy.best_within for p in counted)
    best: Misses | None = None
    splits, floor = 0, 1.0
    for aside, inside in _splits(games, policy):
        splits += 1
        floor = min(floor, binomial_low_tail(sum(inside), len(inside), policy.floor_share))
        tail = hypergeometric_low_tail(sum(inside), len(inside), missed, total)
        if best is None or tail < best.p:
            aside_ids = tuple(sorted({key[0] for key in aside}))
            best = Misses(
                len(inside), sum(inside), total - len(inside), missed - sum(inside), tail, aside_ids
            )
    assert best is not None  # the split setting nothing aside is always asked
    return replace(
        best, p=min(1.0, best.p * splits), splits=splits, floor_p=min(1.0, floor * splits)
    )


def _splits(
    games: dict[GameKey, list[bool]], policy: OverlapPolicy
) -> Iterator[tuple[tuple[GameKey, ...], list[bool]]]:
    """Each choice of up to ``person_set_aside`` overlapping games to count as the
    player's own (none first), with the misses of the games left; a choice leaving fewer
    than ``person_overlap`` decisions is not one (the counts decide, not the misses)."""
    for out in range(min(policy.person_set_aside, len(games) - 1) + 1):
        for aside in combinations(sorted(games), out):
            inside = [m for key, ms in games.items() if key not in aside for m in ms]
            if len(inside) >= policy.person_overlap:
                yield aside, inside


def within_reach(
    helped_windows: Sequence[Window],
    helped_counted: Mapping[GameKey, int],
    helper_windows: Sequence[Window],
    policy: OverlapPolicy = DEFAULT_POLICY,
    one_person: bool = False,
) -> bool:
    """Whether :func:`assess` could find anything, from the helped player's counted
    decisions per game alone (``helped_counted``: its games' counts, those of its
    ``helped_windows``' sessions): False exactly when the tests' minimum counts are not
    met (the z-test's ``min_overlap`` and ``min_base``; one person's, ``person_overlap`` and
    ``person_base``), the games the two played against each other left out as
    :func:`assess` leaves them, so a pair is judged without its decisions read."""
    against = {w.game_id for w in helped_windows} & {w.game_id for w in helper_windows}
    during = overlapping(helped_windows, helper_windows)
    inside = outside = 0
    for key, n in helped_counted.items():
        if key[0] in against:
            continue
        if key in during:
            inside += n
        else:
            outside += n
    if inside >= policy.min_overlap and outside >= policy.min_base:
        return True
    return one_person and inside >= policy.person_overlap and outside >= policy.person_base


def assess(
    helped: str,
    helper: str,
    helped_windows: Sequence[Window],
    helped_play: Sequence[Played],
    helper_windows: Sequence[Window],
    helper_play: Sequence[Played],
    policy: OverlapPolicy = DEFAULT_POLICY,
    one_person: bool = False,
    paces: PacePopulation | None = None,
) -> Finding | None:
    """``helped`` playing better while ``helper`` sat at another table, or None.
    ``one_person``: the two are joined by a strong link (the one-person test applies);
    ``paces``: the population's, for a helper with no games of its own. Games the two
    played against each other are left out of both accounts' play: not either's usual
    (a dump giver's thrown games would make the overlap look better)."""
    against = {w.game_id for w in helped_windows} & {w.game_id for w in helper_windows}
    if against:
        helped_play = [p for p in helped_play if p.game_id not in against]
        helper_play = [p for p in helper_play if p.game_id not in against]
    during = overlapping(helped_windows, helper_windows)
    found = improvement(helped_play, during, policy)
    if found is not None and found.z < policy.alert_sigma:
        found = None
    best = misses(helped_play, during, policy) if one_person else None
    if best is not None and best.p > policy.idle_alpha:
        best = None
    if found is None and best is None:
        return None
    helper_during = overlapping(helper_windows, helped_windows)
    pace = [
        p.seconds
        for p in helped_play
        if one_person and p.seconds is not None and (p.game_id, p.game_number) not in during
    ]
    seen = idle(helper_play, helper_during, pace, policy, paces if one_person else None)
    shown = seen is not None and seen.shown(policy)
    beyond_people = best is not None and best.floor_p <= policy.person_alpha
    if best is not None and best.p > policy.person_alpha and not (shown or beyond_people):
        best = None  # between the lines: the idle helper or the floor is the second sign
        if found is None:
            return None
    alone = found is not None or (best is not None and best.p <= policy.person_alpha)
    idle_helper = seen is not None and seen.ratio >= policy.idle_ratio
    high = (
        (found is not None and found.z >= policy.high_sigma)
        or (best is not None and best.p <= policy.person_high)
        or (alone and idle_helper)  # HIGH's second sign only beside a finding standing alone
    )
    game_ids = tuple(sorted({key[0] for key in during}))
    evidence: list[Evidence] = []
    sigmas: list[float] = []
    if found is not None:
        evidence.append(_improvement_evidence(helped, helper, found, game_ids))
        sigmas.append(round(found.z, 2))
    if best is not None:
        line = policy.person_alpha if best.p <= policy.person_alpha else policy.idle_alpha
        evidence.append(_misses_evidence(helped, helper, best, game_ids, line))
        sigmas.append(_sigma(best.p))
    if seen is not None:
        evidence.append(_idle_evidence(helper, seen, helper_during))
    return Finding(
        detector=Detector.CONSULTING,
        subjects=pair(helped, helper),
        severity=Severity.HIGH if high else Severity.MEDIUM,
        score=max(sigmas),
        score_meaning=(
            "sigma: one-sided z that the player's error per decision was lower while a linked "
            "account sat at another table than otherwise (for one person's accounts, the "
            "normal quantile of the Fisher p-value of their best plays, when larger); alert "
            "at 3 (one person: p <= 0.001, or p <= 0.05 with the linked account's think "
            "times slower then: 1.5 times its own usual, 2 times the other account's, "
            "rank-sum z >= 3.09, or, with no games of its own, among the population's "
            "slowest 5 %, or with so few misses then that a player missing 15 % of "
            "decisions makes them with p <= 0.001), HIGH at 4.75 (p <= 1e-6) or, beside a "
            "finding standing alone, with the linked account idle (1.5 times its usual "
            "think time)"
        ),
        evidence=tuple(evidence),
    )


def _sigma(p: float) -> float:
    """The one-sided normal quantile of a p-value (3.09 at 0.001), capped at 1e-15."""
    return round(NormalDist().inv_cdf(1 - max(p, 1e-15)), 2)


def _improvement_evidence(
    helped: str, helper: str, found: Improvement, game_ids: tuple[str, ...]
) -> Evidence:
    return Evidence(
        kind="better_while_linked_account_seated",
        description=f"{helped} played better while the linked {helper} sat at another table",
        game_ids=game_ids,
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


def _idle_evidence(helper: str, seen: Idle, during: set[GameKey]) -> Evidence:
    return Evidence(
        kind="linked_account_idle",
        description="the linked account's think time a decision at its own table then, "
        "against its usual",
        game_ids=tuple(sorted({key[0] for key in during})),
        details={
            "account": helper,
            "think_time_ratio": f"{seen.ratio:.2f}",
            "rank_sum_z": "" if seen.z is None else f"{seen.z:.2f}",
            "usual_pace": "own games" if seen.own_pace else "the other account's games",
            "population_at_least_as_slow": (
                "" if seen.slower_share is None else f"{seen.slower_share:.3f}"
            ),
        },
    )


def _misses_evidence(
    helped: str, helper: str, best: Misses, game_ids: tuple[str, ...], line: float
) -> Evidence:
    return Evidence(
        kind="best_plays_while_own_account_seated",
        description=f"{helped} missed the best play far less often while {helper}, the "
        "same person by a strong link, sat at another table",
        game_ids=tuple(g for g in game_ids if g not in best.set_aside),
        details={
            "helped": helped,
            "helper": helper,
            "decisions_overlapping": str(best.overlap),
            "misses_overlapping": str(best.overlap_misses),
            "decisions_baseline": str(best.base),
            "misses_baseline": str(best.base_misses),
            "games_set_aside": ",".join(best.set_aside),
            "splits": str(best.splits),
            "p_value": f"{best.p:.3g}",
            "p_at_human_floor": f"{best.floor_p:.3g}",
            "alert_line": f"{line:g}",
        },
    )
