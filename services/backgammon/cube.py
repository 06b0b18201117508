"""The doubling cube: offers before the roll, take, drop, redoubles, beavers, cap, Crawford.

Pure transitions on a frozen :class:`Cube`. Players are 0 and 1. A double may be
offered only by a player who owns the cube or while it is centred, at the start of
the turn before rolling (the game module checks the turn phase), never in the
Crawford game, and never past the cap. Taking doubles the value and gives the cube to
the taker; dropping loses the value before the double. With beavers (money play
only) the doubled player may instead redouble at once and keep the cube; the
original doubler then takes or drops that redouble. Automatic doubles are not played.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from services.backgammon.errors import CubeNotAvailable

DEFAULT_CAP = 64


@dataclass(frozen=True, slots=True)
class CubeRules:
    """Cube options of one game: cap, beavers and Jacoby (money play), Crawford game (match)."""

    cap: int = DEFAULT_CAP
    beavers: bool = False
    jacoby: bool = False
    crawford_game: bool = False

    def __post_init__(self) -> None:
        if self.cap < 1 or self.cap & (self.cap - 1):
            raise CubeNotAvailable(f"the cube cap must be a power of two, got {self.cap}")


@dataclass(frozen=True, slots=True)
class Cube:
    """Cube value and owner (None = centred); ``offered_by`` is set while a double is pending."""

    value: int = 1
    owner: int | None = None
    offered_by: int | None = None
    beaver_pending: bool = False

    @property
    def turned(self) -> bool:
        """True once a double has been taken (what the Jacoby rule asks)."""
        return self.value > 1

    @property
    def offered_value(self) -> int:
        """The value the cube will have if the pending offer is taken."""
        return self.value * 2


def _other(player: int) -> int:
    return 1 - player


def double_refusal_reason(cube: Cube, player: int, rules: CubeRules) -> str | None:
    """Why ``player`` may not double now, or None when the double is allowed."""
    if rules.crawford_game:
        return "no doubling in the Crawford game"
    if cube.offered_by is not None:
        return "a double is already waiting for an answer"
    if cube.owner is not None and cube.owner != player:
        return f"the cube is owned by player {cube.owner}; only its owner may redouble"
    if cube.value * 2 > rules.cap:
        return f"the cube is at {cube.value}: the cap is {rules.cap}"
    return None


def may_double(cube: Cube, player: int, rules: CubeRules) -> bool:
    return double_refusal_reason(cube, player, rules) is None


def offer_double(cube: Cube, player: int, rules: CubeRules) -> Cube:
    """``player`` offers a double (or redouble)."""
    reason = double_refusal_reason(cube, player, rules)
    if reason is not None:
        raise CubeNotAvailable(f"player {player} cannot double: {reason}")
    return replace(cube, offered_by=player)


def _check_answering(cube: Cube, player: int) -> int:
    if cube.offered_by is None:
        raise CubeNotAvailable("no double has been offered")
    if cube.offered_by == player:
        raise CubeNotAvailable(f"player {player} offered this double and cannot answer it")
    return cube.offered_by


def take(cube: Cube, player: int) -> Cube:
    """``player`` takes the pending double: value doubles, the taker owns the cube.

    After a beaver, the original doubler's take leaves the cube with the beaver's owner.
    """
    doubler = _check_answering(cube, player)
    owner = doubler if cube.beaver_pending else player
    return Cube(value=cube.value * 2, owner=owner)


def drop(cube: Cube, player: int) -> int:
    """``player`` drops the pending double; returns the points lost (value before the double)."""
    _check_answering(cube, player)
    return cube.value


def beaver(cube: Cube, player: int, rules: CubeRules) -> Cube:
    """``player``, just doubled, beavers: takes, redoubles at once and keeps the cube."""
    _check_answering(cube, player)
    if not rules.beavers:
        raise CubeNotAvailable("beavers are not allowed in this game")
    if cube.beaver_pending:
        raise CubeNotAvailable("a beaver cannot be beavered again")
    if cube.value * 4 > rules.cap:
        raise CubeNotAvailable(f"a beaver would take the cube past the cap of {rules.cap}")
    return Cube(value=cube.value * 2, owner=player, offered_by=player, beaver_pending=True)
