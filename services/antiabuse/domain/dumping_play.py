"""The analysis half of chip dumping (pure): how the giver lost the games that moved the money.

:func:`services.antiabuse.domain.chip_dumping.assess` finds a pair's one-way money
flow; this module reads the giver's analysed losses to the receiver in that flow
and returns the ``corroboration`` evidence that lifts the flow's finding from
MEDIUM to HIGH:

- ``played_below_own_level``: losses played far below the giver's own level
  (:func:`services.antiabuse.domain.play.far_below`, the baseline being the median
  of all their analysed wins in the window, against anyone);
- ``hopeless_double_taken``: a take that cost at least ``cube_blunder`` (0.3,
  normalised equity; gnubg calls 0.16 a blunder) against passing;
- ``easy_take_passed``: a pass that cost at least ``cube_blunder`` against taking.

A strong player beating a weak one produces the flow but not these: the weak
player's losses are at their own level, and their cube errors are not gifts.
An honest loser blunders a cube now and then, so nothing is returned unless at
least ``min_games`` of the giver's losses to the receiver show a sign.
(Early resignations in good positions are not here: the game service values a
position only when it settles a disconnection, and the analysis does not grade
resignations; see the README.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.antiabuse.domain.findings import Evidence
from services.antiabuse.domain.play import (
    DEFAULT_LEVEL,
    LevelPolicy,
    PlayedGame,
    baseline,
    far_below,
)


@dataclass(frozen=True)
class DumpingPlayPolicy:
    level: LevelPolicy = DEFAULT_LEVEL
    cube_blunder: float = 0.3
    min_games: int = 2


DEFAULT_POLICY = DumpingPlayPolicy()


def corroboration(
    giver: str,
    receiver: str,
    giver_games: Sequence[PlayedGame],
    policy: DumpingPlayPolicy = DEFAULT_POLICY,
) -> list[Evidence]:
    """Evidence from the giver's analysed losses to ``receiver`` (empty: none, or too little)."""
    mine = [g for g in giver_games if g.account_id == giver]
    losses = sorted((g for g in mine if not g.won and g.opponent == receiver), key=lambda g: g.at)
    level = baseline(mine, policy.level)
    signs: list[tuple[str, str, Callable[[PlayedGame], bool]]] = [
        (
            "hopeless_double_taken",
            "took hopeless doubles in {n} game(s) (costing at least {cut} against passing)",
            lambda g: g.worst_take_error >= policy.cube_blunder,
        ),
        (
            "easy_take_passed",
            "passed easy takes in {n} game(s) (costing at least {cut} against taking)",
            lambda g: g.worst_pass_error >= policy.cube_blunder,
        ),
    ]
    if level is not None:
        signs.insert(
            0,
            (
                "played_below_own_level",
                "lost {n} game(s) to the receiver far below their own level "
                f"({level:.3f} per decision in their wins)",
                lambda g: far_below(g, level, policy.level),
            ),
        )
    found = {kind: [g for g in losses if test(g)] for kind, _, test in signs}
    if len({g.game_id for games in found.values() for g in games}) < policy.min_games:
        return []
    return [
        _evidence(kind, text, found[kind], giver, receiver, policy)
        for kind, text, _ in signs
        if found[kind]
    ]


def _evidence(
    kind: str,
    text: str,
    games: Sequence[PlayedGame],
    giver: str,
    receiver: str,
    policy: DumpingPlayPolicy,
) -> Evidence:
    return Evidence(
        kind,
        f"{giver} " + text.format(n=len(games), cut=policy.cube_blunder),
        game_ids=tuple(g.game_id for g in games),
        details={
            "giver": giver,
            "receiver": receiver,
            "errors_per_decision": ",".join(f"{g.error_per_decision:.4f}" for g in games),
            "worst_take_errors": ",".join(f"{g.worst_take_error:.4f}" for g in games),
            "worst_pass_errors": ",".join(f"{g.worst_pass_error:.4f}" for g in games),
        },
    )
