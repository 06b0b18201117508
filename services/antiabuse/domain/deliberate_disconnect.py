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
do with the position, so each stop is losing with the chance that a player is that far
behind at a random moment of play. For two players of equal strength that chance is set
on the high side at ``base_rate`` (0.35: two equal players are each behind by that much
well under half the time; see the README); a weaker player is behind more often, a
stronger one less, so the chance is read at the player's strength deficit (below). Of
``n`` analysed stops, ``k`` losing: the p-value is the binomial tail P(X >= k), X ~
Binomial(n, that chance). A finding needs at least ``min_losing`` losing stops in
distinct sessions and p <= ``alpha`` (MEDIUM) or <= ``strong_alpha`` (HIGH). One dropped
connection, or a few, is never enough.

**The strength deficit** (:func:`strength_deficit`). A player who gives up ``g`` PR points
to their opponent (500 x error per decision, the analysis' rating) loses about ``g x
0.002`` equity a decision; over the twenty-odd decisions a player makes in a game that is
``0.04 g`` of equity, a win chance of about half that, built up over the game, so a
random moment sees about half again: ``share_per_pr`` (0.01 of a share a PR point; a
10-point gap, PR 20 against PR 10, is 0.1, which the equal players' curve turns from 0.35
into 0.5 at the line). Each level is the median error of that player's analysed sessions
in the window; the player's deficit is the mean over their sessions of their level less
that session's opponent's, shrunk toward 0 by ``n / (n + level_shrink)`` for their ``n``
analysed sessions (one game's PR is about 5.6 points either side of the player's own, so a
level from one or two games says little), within ``deficit_range`` (-0.1 to 0.15). The
equal players' curve (``depth``) is read ``deficit`` further to the right: at the losing
line that is 0.35 + 1.5 x deficit (the curve above the line rises by ``above_line``). With
no analysed sessions the deficit is 0 and the test is the equal players'. A walker cannot
lower it by walking: the level is the quality of its play, not its results.

Running out the timer counts the same way ("disconnections and timeouts concentrated in
positions that were losing"): a session lost on time is a stop too, its share the one
the game service's ``StopValued`` gives the position where the clock ran out. An honest
player's clock runs out when their connection or attention goes, at moments as unrelated
to the position as a dropped connection, so the same base rate holds; the two are tested
together, so a player who alternates between them is judged on all their stops.

**A second route: losing stops against the sessions played.** The test above looks only
at the stops and asks whether their share of losing ones is beyond chance; it cannot
tell two losing stops from two dropped connections, however many sessions the player
finished between them (p0^2 = 0.12), so a disconnecter who walks from half the games
it is losing, over 8 to 20 sessions, has 2 to 10 losing stops and mostly stayed under
its 4. A disconnecter finishes every game it is winning and walks from many it is
losing; an honest player's connection drops (or attention goes) at a rate that does
not care about the position. So the second route counts the player's losing stops
among all their ``sessions`` in the window: under the null hypothesis each session
ends in a losing stop with the chance ``r x base_rate``, ``r`` the player's rate of
stopping at all, and the p-value is P(X >= k), X ~ Binomial(sessions, r x base_rate).

``r`` is ``stop_rate`` (0.045), the platform's rate of games ending by a drop (3 %) or
a timeout (1.5 %) counted as if every such game were this player's (each is one of its
two players'): twice what an ordinary honest player stops at. A flaky player, whose
connection drops far more often, shows it in the stops that were *not* losing (a
dropped connection falls in winning positions too): ``r`` is raised to the rate those
beyond the first imply, ``(not_losing - 1) / (sessions x (1 - line))`` (``line`` the
chance at the losing line), so a flaky player is judged at their own rate. A
disconnecter's non-losing stops are its own honest drops, rare, and leave ``r`` at the
floor.

One non-losing outage does not raise ``r`` (``floor_allows``): a player stopping at the
floor's rate has 0.045 x 0.65 = 0.029 non-losing outages a session, so one or more in 9
sessions with chance 1 - 0.971^9 = 23 %, in 19 sessions 43 %: one is what the floor's
player does, not a sign of a flaky connection, and reading it as one (r = 1 / (sessions x
0.65), 0.17 in 9 sessions, four times the floor) cleared disconnecters that walked 2 or 3
times and dropped once in a winning position (fresh held-out seeds 777002, 880004,
990003: 3 or 4 in 19 sessions, 2 of 3 in 8 to 13). From the second non-losing outage on,
``r`` is the rate those beyond the first imply: the first is the floor's own, so only the
rest are evidence of more (the rate rises from the floor by steps of one outage, where
counting them all made it jump from 0.045 to 2 / (sessions x 0.65) at the second: a
walker that also dropped 3 times while winning in 19 sessions was judged at 0.24 a
session, now at 0.16). The flaky players the route flagged on the
fresh seeds are those whose first drops all fell in losing positions, which this leaves
as they were. What it cannot tell: a flaky player whose drops happen to
fall only in losing positions (two of two: about (1/3)^2 of such players who drop
twice) looks like a disconnecter; the rate route needs ``min_losing_rate`` (2)
losing stops, and a person reads the alert.

Stops within ``outage`` (an hour) of the player's previous stop are one outage, counted
once in this route: a connection problem spans an evening's games, and two drops a few
minutes apart are not two independent draws (the held-out evaluation's only honest
player with two losing stops in its first sessions lost both within seven minutes).
The rate route alerts at p <= ``rate_alpha`` (0.005), the first at p <= ``alpha`` (0.01);
either raises the finding, MEDIUM, HIGH at p <= ``strong_alpha`` (the smaller p-value).
Why 0.005: an ordinary honest player stops in a losing position in about 0.7 % of
sessions, so among 600 honest accounts a month about one shows two losing stops within
its first 6 to 9 sessions, as likely as a disconnecter that walked twice in 9 (p 0.002
to 0.008 both). Replayed offline over three fresh held-out seeds, 0.01 flagged one or
two honest players a seed, 0.005 one (the evaluation's budget: 1 of 640 keeps the rate's
upper 95 % bound under 1 %), and 0.002 lost 2 of 12 disconnecters on the evaluated seed.

The rate route judges a rate only from the player's ``rate_min_sessions``-th (5th)
session in the window. The own-rate correction above needs time to see a flaky
connection drop in a winning position; with 2 or 3 sessions behind them, a player's two
losing drops say as much about a flaky connection as about walking. Replayed on seven
fresh held-out seeds, the honest players this route flagged were flagged at their 2nd to
4th session (two losing drops a day or more apart, none afterwards in 4 to 9 more
sessions); a disconnecter plays on, walks again, and is judged then.

**Stops before the 5th session, judged when it ends** (``early_alpha``). The test runs at
each stop, and a player whose losing stops all came before their 5th session and who then
finished their games was never judged: a walker that walked from 2 or 3 of its first 4
sessions and then played its games to the end (11 of the 45 disconnecters it missed on
40 tuning seeds, 1711001 to 1711040). So the detector judges a player once more
when their 5th session ends (the first the rate routes may judge), at the routes' figures
but at the level ``early_alpha`` (0.001) instead of ``rate_alpha``. Why stricter: the
evidence then is stops of the player's first four sessions, those the 5-session minimum
was for, with nothing new; and at 5 sessions the bound is ``10 q^2 H_2(V)``, 0.0025 before
the depths, so at ``rate_alpha`` every player with two losing outages among their first
four sessions would be flagged whatever their depths. An ordinary honest player has a
losing outage in about 0.7 % of sessions, so ``C(4, 2) x 0.0074^2`` = 3.3e-4 of them reach
the look (about 0.1 of the 350-odd honest accounts a month that play 5 sessions or more),
a flaky one (4 % a session) 1 %; at 0.001 only those whose two stops are also deep (``H_2(V)
<= 0.4``: a walk falls anywhere from a gammon lost to the line, an honest drop mostly near
the line) are flagged.

**The drops that came back raise the rate too** (:func:`returned_rate`). A drop that came
back within the reconnect window fell at a moment unrelated to the position and says how
often the player's connection drops, ahead or behind: the honest evidence a walk never
leaves. An honest drop comes back with a chance of at least ``comes_back`` (0.6, odds 1.5;
the walked route's reading), so ``R`` drops that came back stand for at most about ``R /
1.5`` that did not: those beyond ``returned_allows`` (1: the floor's player, 0.03 such drops
a session, has 0.045 a session that come back) give a rate of drops that did not come back,
``(R - 1) / (1.5 x sessions)``, and with the floor's timeout part (``stop_rate -
drop_rate``, 0.015) a stopping rate; the route takes it when higher. Only when a losing
outage was a disconnection: a drop says nothing of a clock, and losing outages that are
all timeouts stay judged at the floor's rate (three times the floor's 0.015 for a clock).
Why: an ordinary honest player stops in 2.25 % of sessions and their drops come back with a
chance of 0.6 to 0.95 (odds 1.5 to 19), so a player whose connection comes back often shows
several returns in a few sessions; the honest players nearest the rate route's line on the
tuning seeds were such players with two early losing stops (two drops back in 5 sessions,
three in 10, four in 23, six in 18, nine in 21), and the rate route read them at the floor as
if those returns were not there. A walker whose connection comes back as often is read the
same way, so its walks must be more than such a connection explains; its timeouts are not
touched.

**How far behind** (``p_behind``). The count draws a line and asks how many stops fall
under it; it does not weigh how far under. A disconnecter walks from games that are lost;
an honest drop falls at a random moment, and a random moment is rarely far behind (most of
a game is played within half a point of even). So the losing outages' depths are weighed
together: each stop's ``depth``, the chance (set on the high side) that a random moment is
at most that share, relative to the losing line's (``depth(share) / base_rate``, in (0,
1]), and their product ``V`` over the ``k`` losing outages. Under the null hypothesis a
session ends in a losing outage with the chance ``r x base_rate`` and that relative depth
is uniform in (0, 1] or larger, so the chance that some ``k`` of the ``n`` sessions ended
in losing outages whose depths multiply to ``V`` or less is at most ``C(n, k) x (r x
base_rate)^k x H_k(V)``, with ``H_k(V) = V x sum_{i<k} (-ln V)^i / i!`` (the chance that a
product of ``k`` uniforms is at most ``V``). With every stop at the line (``V`` = 1) it is
the union bound of the losing count; deeper stops lower it, a stop lost by a gammon much
more than one just under the line. It alerts at ``rate_alpha`` from ``min_losing_rate``
losing outages, like the count; the two move together, so two looks at 0.005 make at most
0.01 a look.

``depth``: 0.35 at the losing line (``base_rate``), ``deep_base_rate`` (0.2) at a share of
``deep_share`` (0.25: money equity -1.5 a cube or worse, more than the game lost; a match
25 % or less), a straight line between them, and below 0.25 in proportion to the share
(0.8 x share: a gammon or backgammon all but certain is a small part of a game), never
under ``depth_floor`` (0.05: no stop weighs more than one at a share of 1/16, where a match's
trailer or a gammon-lost position can sit for long stretches). The held-out population's
honest stops (drawn around even; 843 of them over eight seeds) are at or under it at every
point: 0.35 at 0.4 (0.28 to 0.41 a seed), 0.23 at 0.31 (the line says 0.26), 0.15 at 0.25
(0.2), 0.04 at 0.1 (0.08), 0.02 at 1/16 (0.05). For a player with a strength deficit the
stop's depth and the line's are both read ``deficit`` to the right (the relative depth is
``depth(share + deficit) / depth(0.4 + deficit)``), and ``r x`` the line's chance is a
session's chance of a losing outage.

It replaced a second count, of stops *far behind* (share <= 0.25, each session such a stop
with the chance ``r x 0.2``), which drew a second line and weighed nothing beyond it: two
walks at 0.07 and 0.31 in 8 sessions were one stop far behind (and 0.0065 by the losing
count: a miss on an unseen seed), two honest drops at 0.18 and 0.24 in 11 sessions two
(0.0042: a false alarm on the same seed). Weighed together: V = (0.056 / 0.35) x (0.26 /
0.35) = 0.119, H_2 = 0.119 x (1 + 2.13) = 0.372, p = 28 x 0.01575^2 x 0.372 = 0.0026; and V
= 0.411 x 0.549 = 0.226, H_2 = 0.562, p = 55 x 0.000248 x 0.562 = 0.0077. Two walks at 0.2
and 0.1 in 9 sessions are 0.0030 (the count far behind said 0.0028).

**A third route: walks that never came back** (:func:`walked_test`). The game publishes
``PlayerReconnected`` when a disconnected player comes back within the reconnect window, and
a drop that does not come back is a stop. A dropped connection usually comes back (the game
notices a drop only after 15 s of silence, and what lasts longer than that is mostly a
switched app, a dead spot on a mobile network or a restarted router, shorter than the five
minutes); a walk-away never does. So the drops that did *not* come back are weighed against
those that did: under the null hypothesis the player's connection drops at a rate of its
own (any), each drop comes back with a chance of at least ``comes_back`` (0.6, the low side:
a player whose drops are mostly long ones, a failing line or calls on a phone) wherever
play stands, and where it stood is a random moment. Given the player's rate ``u`` of drops
that do not come back, the recovered ones are Poisson with mean at least ``u x S x c / (1 -
c)`` (``c`` = ``comes_back``), independent of the others, so the chance of ``k`` losing
disconnection outages at least as deep (the depths' bound above, ``C(S, k) x (u x line)^k x
H_k(V)``) *and* no more than the ``R`` recovered drops seen is that bound times ``P(Poisson(u
x S x c / (1 - c)) <= R)``; the p-value is its largest over ``u`` up to the player's own
rate: ``drop_rate`` (0.03, the disconnection part of ``stop_rate``: 3 % of games end by a
drop that did not come back, counted as if each were this player's), raised by the
non-losing disconnection outages beyond the floor's one (the flaky rule above) and by the
recovered drops beyond ``returned_allows`` (1), read at the least odds of coming back (the
highest rate of unrecovered drops they can imply). A player whose non-losing disconnections
beyond the floor's one did not come back either is read at their own odds of coming back
when lower than ``c / (1 - c)``, ``(R + 1) x (1 - line) / beyond`` (a connection that goes
for good, wherever play stands). A flaky connection comes back often and so carries its
own rate; a walker's walks never come back, and its own honest drops are rare.
Timeouts are not in this route (a player whose clock ran out was connected), and nor is the
turn: the game notices a drop after 15 s of silence, within which an opponent on roll has
usually moved, so the awaited seat is the leaver's for most honest drops as for walks.

What the events do not carry, and would tell more: whether they were playing at another
table or started a new game within the reconnect window (a connection that was up), and
how the position had moved just before (the analysis' ``luck``); the held-out population
carries neither, so nothing here uses them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity
from services.antiabuse.domain.stats import binomial_tail, median

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
    stop_rate: float = 0.045  # the rate route's floor for the player's rate of stopping
    rate_alpha: float = 0.005  # the rate route's level (MEDIUM); HIGH at strong_alpha
    min_losing_rate: int = 2  # losing outages the rate route needs
    outage: timedelta = timedelta(hours=1)  # stops this close after another are one outage
    rate_min_sessions: int = 5  # sessions the rate route needs before it judges a rate
    deep_share: float = 0.25  # far behind: money E <= -1.5 a cube; a match 25 %
    deep_base_rate: float = 0.2  # the chance a random moment is that far behind (high side)
    floor_allows: int = 1  # non-losing outages within the floor's rate: they do not raise it
    depth_floor: float = 0.05  # the least chance a stop's depth is given (a share of 1/16)
    share_per_pr: float = 0.01  # a random moment's share given up per PR point of deficit
    level_shrink: float = 2.0  # a deficit from n analysed sessions counts n / (n + this)
    deficit_range: tuple[float, float] = (-0.1, 0.15)  # the deficit's bounds, as a share
    above_line: float = 1.5  # depth per share above the losing line (a weaker player's)
    comes_back: float = 0.6  # the least chance an honest drop comes back within the window
    drop_rate: float = 0.03  # the walked route's floor for the rate of drops not come back
    returned_allows: int = 1  # recovered drops within the floor: they do not raise it
    early_alpha: float = 0.001  # the level at the 5th session's end, for stops before it


DEFAULT_POLICY = DisconnectPolicy()


def losing(stop: Stop, policy: DisconnectPolicy = DEFAULT_POLICY) -> bool:
    return stop.share <= policy.losing_share


def p_value(
    stops: Sequence[Stop], policy: DisconnectPolicy = DEFAULT_POLICY, deficit: float = 0.0
) -> float:
    """The chance of at least this many losing stops among these if timing were random."""
    k = sum(1 for s in stops if losing(s, policy))
    return binomial_tail(k, len(stops), base_rate(policy, deficit))


def outages(stops: Sequence[Stop], policy: DisconnectPolicy = DEFAULT_POLICY) -> list[Stop]:
    """The stops that began an outage: each stop more than ``outage`` after the previous
    one (the later stops of one connection problem are left out)."""
    began: list[Stop] = []
    previous: datetime | None = None
    for stop in sorted(stops, key=lambda s: s.at):
        if previous is None or stop.at - previous > policy.outage:
            began.append(stop)
        previous = stop.at
    return began


def strength_deficit(
    own: Sequence[float],
    opponents: Sequence[Sequence[float]],
    policy: DisconnectPolicy = DEFAULT_POLICY,
) -> float:
    """How far behind (as a share) the player is at a random moment of their sessions for
    the gap in strength: their level (the median error per decision of their analysed
    sessions, ``own``) against each session's opponent's (the median of that opponent's,
    one list per session), in PR points (500 x error) times ``share_per_pr``, the mean over
    the sessions, shrunk toward 0 by ``n / (n + level_shrink)`` for the player's ``n``
    analysed sessions (a level from few games is noisy), within ``deficit_range``.
    Negative for a player stronger than their opponents; 0 without levels."""
    levels = [median(errors) for errors in opponents if errors]
    if not own or not levels:
        return 0.0
    gap = 500 * (median(own) - sum(levels) / len(levels))
    n = len(own)
    low, high = policy.deficit_range
    return max(low, min(high, policy.share_per_pr * gap * n / (n + policy.level_shrink)))


def depth(share: float, policy: DisconnectPolicy = DEFAULT_POLICY, deficit: float = 0.0) -> float:
    """The chance (set on the high side) that a random moment of play is at most ``share``
    for a player ``deficit`` behind their opponents (:func:`strength_deficit`): the equal
    players' curve read at ``share + deficit``: ``base_rate`` at the losing line,
    ``deep_base_rate`` at the deep one, a straight line between them, in proportion to the
    share below the deep line, never under ``depth_floor``; above the losing line rising by
    ``above_line`` a share (a weaker player's line), never over 0.95."""
    p, at = policy, share + deficit
    if at > p.losing_share:
        return min(0.95, p.base_rate + (at - p.losing_share) * p.above_line)
    if at >= p.deep_share:
        slope = (p.base_rate - p.deep_base_rate) / (p.losing_share - p.deep_share)
        return p.deep_base_rate + (at - p.deep_share) * slope
    return max(p.depth_floor, p.deep_base_rate * at / p.deep_share)


def base_rate(policy: DisconnectPolicy = DEFAULT_POLICY, deficit: float = 0.0) -> float:
    """The chance a random moment is losing for a player ``deficit`` behind their opponents
    (the policy's ``base_rate`` for equal players)."""
    return depth(policy.losing_share, policy, deficit)


def product_tail(k: int, product: float) -> float:
    """P(U_1 x ... x U_k <= product) for k independent uniforms on (0, 1]:
    ``product x sum_{i<k} (-ln product)^i / i!``."""
    if k <= 0 or product >= 1.0:
        return 1.0
    log = -math.log(product)
    return min(1.0, product * sum(log**i / math.factorial(i) for i in range(k)))


@dataclass(frozen=True)
class RateTest:
    """The rate route: ``losing`` losing outages in ``sessions``, ``not_losing`` other
    outages, the player's stopping rate ``rate`` and the p-value;
    ``behind``, the product of the losing outages' depths relative to the losing line's,
    and its bound ``p_behind``; ``returned_rate``, the stopping rate the player's drops that
    came back imply (0 when they imply none or were not weighed)."""

    sessions: int
    losing: int
    not_losing: int
    rate: float
    p: float
    behind: float = 1.0
    p_behind: float = 1.0
    returned_rate: float = 0.0


def returned_rate(returned: int, played: int, policy: DisconnectPolicy = DEFAULT_POLICY) -> float:
    """The stopping rate a player's ``returned`` drops that came back imply over ``played``
    sessions: those beyond ``returned_allows``, read at the least odds of coming back
    (``comes_back``: the most drops that did not come back they can stand for), plus the
    floor's timeout part (``stop_rate - drop_rate``: a drop says nothing of a clock); 0 when
    none is beyond."""
    beyond = returned - policy.returned_allows
    if beyond <= 0 or played <= 0:
        return 0.0
    odds = policy.comes_back / (1 - policy.comes_back)
    return beyond / (odds * played) + policy.stop_rate - policy.drop_rate


def rate_test(
    stops: Sequence[Stop],
    sessions: int,
    policy: DisconnectPolicy = DEFAULT_POLICY,
    deficit: float = 0.0,
    returned: int | None = None,
) -> RateTest:
    """Losing outages among ``sessions`` against the player's own rate of stopping, for a
    player ``deficit`` behind their opponents at a random moment; given the ``returned``
    drops of theirs that came back, a rate they imply counts too when a losing outage was
    a disconnection (:func:`returned_rate`)."""
    began = outages(stops, policy)
    bad = [s for s in began if losing(s, policy)]
    k, others = len(bad), len(began) - len(bad)
    played = max(sessions, len(began))
    line = base_rate(policy, deficit)
    rate = policy.stop_rate
    if others > policy.floor_allows:  # a flaky connection: judged at its own rate
        rate = max(rate, (others - policy.floor_allows) / (played * (1 - line)))
    from_returns = 0.0
    if returned is not None and any(s.how == DISCONNECTION for s in bad):
        from_returns = returned_rate(returned, played, policy)  # a connection that drops often
        rate = max(rate, from_returns)
    each = min(1.0, rate * line)  # a session's chance of a losing outage
    chance = binomial_tail(k, played, each)
    behind = math.prod(depth(s.share, policy, deficit) / line for s in bad)
    behind_chance = min(1.0, math.comb(played, k) * each**k * product_tail(k, behind))
    return RateTest(played, k, others, rate, chance, behind, behind_chance, from_returns)


def _rate_alerts(rate: RateTest, policy: DisconnectPolicy) -> float | None:
    """The rate route's p-value when it alerts (the smaller of the count's and the depths'
    that reach ``rate_alpha``, with ``min_losing_rate`` losing outages), or None; never
    before ``rate_min_sessions`` sessions."""
    if rate.sessions < policy.rate_min_sessions or rate.losing < policy.min_losing_rate:
        return None
    chances = [p for p in (rate.p, rate.p_behind) if p <= policy.rate_alpha]
    return min(chances) if chances else None


def poisson_at_most(r: int, mean: float) -> float:
    """P(X <= r) for X ~ Poisson(mean)."""
    term = total = math.exp(-mean)
    for j in range(1, r + 1):
        term *= mean / j
        total += term
    return min(1.0, total)


@dataclass(frozen=True)
class WalkedTest:
    """The walked route: ``losing`` losing disconnection outages (their relative depths
    multiplying to ``behind``) in ``sessions``, ``returned`` drops that came back, the
    player's highest rate of drops that do not come back ``rate_cap``, the rate at which the
    bound is largest ``rate``, the odds that a drop comes back it was read at ``odds``, and
    the p-value ``p``."""

    sessions: int
    losing: int
    not_losing: int
    returned: int
    rate_cap: float
    rate: float
    odds: float
    behind: float
    p: float


def walked_test(
    stops: Sequence[Stop],
    sessions: int,
    returned: int,
    policy: DisconnectPolicy = DEFAULT_POLICY,
    deficit: float = 0.0,
) -> WalkedTest:
    """Losing disconnections that never came back among ``sessions``, against the
    ``returned`` drops of the player that did (the third route, in the module's words)."""
    began = outages([s for s in stops if s.how == DISCONNECTION], policy)
    bad = [s for s in began if losing(s, policy)]
    k, others = len(bad), len(began) - len(bad)
    played = max(sessions, len(began))
    line = base_rate(policy, deficit)
    odds = policy.comes_back / (1 - policy.comes_back)
    cap = policy.drop_rate
    if others > policy.floor_allows:  # drops in winning positions: a flaky connection
        beyond = others - policy.floor_allows
        cap = max(cap, beyond / (played * (1 - line)))
        # ... whose own drops may come back less often: read at their own odds if lower
        odds = min(odds, (returned + 1) * (1 - line) / beyond)
    if returned > policy.returned_allows:  # drops that came back: the rate they can imply
        cap = max(cap, (returned - policy.returned_allows) / (odds * played))
    behind = math.prod(depth(s.share, policy, deficit) / line for s in bad)
    spread = math.comb(played, k) * product_tail(k, behind)

    def bound(rate: float) -> float:
        union = min(1.0, spread * (rate * line) ** k)
        return union * poisson_at_most(returned, rate * odds * played)

    rate = _largest(bound, cap)
    return WalkedTest(played, k, others, returned, cap, rate, odds, behind, bound(rate))


def _largest(bound: Callable[[float], float], cap: float) -> float:
    """Where ``bound`` (rising, then falling: a power of the rate times a Poisson tail that
    falls with it) is largest in (0, ``cap``]: a ternary search."""
    low, high = 0.0, cap
    for _ in range(100):
        a, b = low + (high - low) / 3, high - (high - low) / 3
        if bound(a) < bound(b):
            low = a
        else:
            high = b
    return (low + high) / 2


def _walked_alerts(walked: WalkedTest, policy: DisconnectPolicy) -> float | None:
    """The walked route's p-value when it alerts (as the rate route: ``rate_alpha``, from
    ``min_losing_rate`` losing outages and the ``rate_min_sessions``-th session), or None."""
    if walked.sessions < policy.rate_min_sessions or walked.losing < policy.min_losing_rate:
        return None
    return walked.p if walked.p <= policy.rate_alpha else None


def assess(
    account_id: str,
    stops: Sequence[Stop],
    policy: DisconnectPolicy = DEFAULT_POLICY,
    sessions: int | None = None,
    deficit: float = 0.0,
    returned: int | None = None,
) -> Finding | None:
    """The account's finding, if its stops were losing beyond chance: among its stops,
    or (given the ``sessions`` it played in the window) among its sessions, and (given the
    drops of theirs that ``returned`` within the window too) its disconnections that never
    came back; for a player ``deficit`` behind their opponents at a random moment
    (:func:`strength_deficit`)."""
    mine = list({s.game_id: s for s in stops if s.account_id == account_id}.values())
    bad = sorted((s for s in mine if losing(s, policy)), key=lambda s: s.at)
    among = p_value(mine, policy, deficit)
    chances: list[float] = []
    if len(bad) >= policy.min_losing and among <= policy.alpha:
        chances.append(among)
    rate = rate_test(mine, sessions, policy, deficit, returned) if sessions is not None else None
    rate_chance = _rate_alerts(rate, policy) if rate is not None else None
    alerting = rate if rate_chance is not None else None
    if rate_chance is not None:
        chances.append(rate_chance)
    walked = None
    if sessions is not None and returned is not None:
        walked = walked_test(mine, sessions, returned, policy, deficit)
    walked_chance = _walked_alerts(walked, policy) if walked is not None else None
    if walked_chance is not None:
        chances.append(walked_chance)
    if not chances:
        return None
    chance = min(chances)
    details = {
        "abandoned": str(len(mine)),
        "losing": str(len(bad)),
        "losing_timeouts": str(sum(1 for s in bad if s.how == TIMEOUT)),
        "shares": ",".join(f"{s.share:.4f}" for s in bad),
        "base_rate": f"{base_rate(policy, deficit):.4g}",
        "deficit": f"{deficit:.3g}",
        "p_value": f"{among:.3g}",
    }
    if rate is not None:
        details |= {
            "sessions": str(rate.sessions),
            "losing_outages": str(rate.losing),
            "other_outages": str(rate.not_losing),
            "stop_rate": f"{rate.rate:.4f}",
            "returned_rate": f"{rate.returned_rate:.4f}",
            "p_value_sessions": f"{rate.p:.3g}",
            "behind": f"{rate.behind:.3g}",
            "p_value_behind": f"{rate.p_behind:.3g}",
        }
    if walked is not None:
        details |= {
            "losing_walks": str(walked.losing),
            "came_back": str(walked.returned),
            "walk_rate": f"{walked.rate:.4f}",
            "p_value_walked": f"{walked.p:.3g}",
        }
    return Finding(
        detector=Detector.DELIBERATE_DISCONNECT,
        subjects=(account_id,),
        severity=Severity.HIGH if chance <= policy.strong_alpha else Severity.MEDIUM,
        score=float(f"{chance:.3g}"),
        score_meaning=_meaning(len(bad), len(mine), alerting, policy, deficit)
        + (_walked_meaning(walked, policy) if walked_chance is not None else ""),
        evidence=(
            Evidence(
                "disconnected_when_losing",
                f"{len(bad)} of {len(mine)} sessions abandoned until the reconnect window "
                "closed or lost on time were losing by the analysis of where play stopped"
                + (f", in {rate.sessions} sessions played" if rate is not None else ""),
                game_ids=tuple(s.game_id for s in bad),
                details=details,
            ),
        ),
    )


def _meaning(
    bad: int, stops: int, rate: RateTest | None, policy: DisconnectPolicy, deficit: float
) -> str:
    among_stops = (
        f"chance that {bad} or more of {stops} abandoned sessions in {policy.window.days} "
        f"days were losing (share <= {policy.losing_share}) if the disconnections fell at "
        f"random moments (base rate {base_rate(policy, deficit):.3g} for a player "
        f"{deficit:.3g} of a share behind their opponents at a random moment)"
    )
    if rate is None:
        return among_stops
    return (
        f"the smaller, of the tests that alerted, of: the {among_stops}; the chance of "
        f"{rate.losing} or more losing "
        f"outages in {rate.sessions} sessions for a player who stops in {rate.rate:.1%} of "
        f"sessions at random moments; and the chance of {rate.losing} losing outages "
        f"in {rate.sessions} sessions whose "
        f"depths (the chance a random moment is that far behind, relative to the losing "
        f"line's) multiply to {rate.behind:.3g} or less"
    )


def _walked_meaning(walked: WalkedTest | None, policy: DisconnectPolicy) -> str:
    if walked is None:
        return ""
    return (
        f"; the chance of {walked.losing} losing disconnections in {walked.sessions} "
        f"sessions at least as deep that never came back, with no more than "
        f"{walked.returned} drops that did, for a player whose drops come back with a "
        f"chance of at least {policy.comes_back:g} (at the rate of drops not come back, up "
        f"to the player's own {walked.rate_cap:.4f} a session, where it is largest)"
    )
