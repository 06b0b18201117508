"""Disconnection settlements from the rules library's own exact figures.

Until the analysis service serves ``SettlementShares``, :class:`RulesLibraryAnalyst`
settles a game left by a disconnected player.

What a share means is the wallet's rule for a disconnection split: each player puts
in their largest possible loss at the current cube (stake x cube x 3 in a money game,
the stake in a match) and takes back their share of that pot. So a money share is
``(1 + E / 3) / 2`` for the on-roll player's equity ``E`` per unit of cube, and a match
share is a match-winning chance.

Exact figures exist for bear-offs (both sides' checkers all in their home boards):

- money game: ``E`` is the cubeful equity from the library's exact one-sided
  bear-off probabilities (``services.backgammon.bearoff_eval``, the method of GNU
  Backgammon's one-sided database, which they match to about 1e-5; truly optimal
  two-sided play can shift small positions by up to ~0.5% of winning chance), made
  cubeful by Janowski's formula with GNU Backgammon's bear-off cube efficiency 0.6,
  the on-roll player doubling when right, the Jacoby rule honoured, beavers ignored,
  and the house cap (64) making the cube dead when reached. With the dice already
  rolled, ``E`` is that of the best play.
- match: only when this game decides the match whichever way it ends (each side's
  score plus the cube reaches the length, e.g. double match point): the share is then
  the exact chance of winning the game. Any other match score needs a match equity
  table the library does not have: not analysed.

Not analysed (even split): races with a checker still outside a home board (the
library has no race tables), contact positions, and a pending double or resignation
(the answer, not the position, would decide the value).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import threading
from decimal import Decimal
from pathlib import Path

from services.backgammon import bearoff, match_id, position_id
from services.backgammon.bearoff_eval import (
    CubeAccess,
    MoneyCube,
    cubeful_before_roll,
    equity_after_roll,
    is_bearoff,
    probabilities,
)
from services.backgammon.board import Board
from services.backgammon.cube import DEFAULT_CAP
from services.backgammon.errors import RulesError
from services.backgammon.match_id import GameStateCode, MatchIdState
from services.game.ports import EVEN_SPLIT, SettledPosition, Settlement
from services.kit.logging import get_logger

log = get_logger(__name__)

SHARE_PLACES = Decimal("0.000001")


def default_cache_dir() -> Path | None:
    """Where the bear-off database is cached: ``$XDG_CACHE_HOME/tavla`` or ``~/.cache/tavla``."""
    base = os.environ.get("XDG_CACHE_HOME")
    try:
        return Path(base) / "tavla" if base else Path.home() / ".cache" / "tavla"
    except RuntimeError:  # no home directory: build in memory
        return None


class RulesLibraryAnalyst:
    """Exact figures from the rules library for bear-offs; otherwise "not analysed".

    The figures come from the one-sided bear-off database, loaded from ``cache_dir``
    (the image ships one) or built there the first time (about 8 s of CPU). The game
    service calls :meth:`warm_up` at start, so no settlement waits for that (see the
    module docstring for what is analysed and how).
    """

    def __init__(self, cache_dir: Path | None = None, *, use_cache: bool = True) -> None:
        self._cache_dir = (cache_dir or default_cache_dir()) if use_cache else None
        self._lock = threading.Lock()
        self._ready = False

    async def warm_up(self) -> None:
        """Have the database ready: built in a child process if need be, then loaded.

        Building takes seconds of pure-Python CPU; in a thread of this process it would
        hold the interpreter lock away from the calls being served all that time.
        """
        directory = self._cache_dir
        if directory is not None and not (directory / bearoff.CACHE_FILE).is_file():
            builder = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "services.backgammon.bearoff", "--write", str(directory)
            )
            if await builder.wait() != 0:
                log.warning("bearoff_build_failed", directory=str(directory))
        await asyncio.to_thread(self._load_locked)  # builds in memory if the child could not
        # The database is ~100,000 objects kept for the process's life: out of the
        # cyclic collector's reach, as start-up's are (kit.server.tune_garbage_collector),
        # or every full collection walks them all (tens of ms on one core, mid-call).
        gc.freeze()

    async def settle(self, position: SettledPosition) -> Settlement:
        return await asyncio.to_thread(self.settle_now, position)

    def settle_now(self, position: SettledPosition) -> Settlement:
        """The settlement, computed in the calling thread (the database is shared, locked)."""
        try:
            board = position_id.decode(position.position_id)
            state = match_id.decode(position.gnubg_match_id)
        except RulesError:
            return EVEN_SPLIT
        if not _exact_figures_exist(board, state, position.match_length):
            return EVEN_SPLIT
        with self._lock:
            self._load()
            on_roll = _on_roll_share(board, state, position.match_length)
        share = min(max(Decimal(on_roll).quantize(SHARE_PLACES), Decimal(0)), Decimal(1))
        shares = (share, 1 - share) if position.on_roll == 0 else (1 - share, share)
        return Settlement(shares, analysed=True)

    def _load_locked(self) -> None:
        with self._lock:
            self._load()

    def _load(self) -> None:
        if self._ready:
            return
        if self._cache_dir is not None:
            bearoff.use_database(bearoff.cached_database(self._cache_dir))
        self._ready = True


def _exact_figures_exist(board: Board, state: MatchIdState, match_length: int) -> bool:
    if state.game_state is not GameStateCode.PLAYING or state.doubled or state.resignation:
        return False
    if not is_bearoff(board):
        return False
    return not match_length or _game_decides_match(state, match_length)


def _game_decides_match(state: MatchIdState, length: int) -> bool:
    """Whoever wins this game wins the match, whatever the kind of win."""
    return all(score + state.cube_value >= length for score in state.score)


def _on_roll_share(board: Board, state: MatchIdState, match_length: int) -> float:
    """The on-roll player's share: win chance (deciding match game) or (1 + E/3) / 2 (money)."""
    dice = state.dice if all(state.dice) else None
    if match_length:
        if dice is None:
            return probabilities(board).win
        after = equity_after_roll(
            board, dice, lambda b: 2.0 * probabilities(b).win - 1.0, gammons=False
        )
        return (1.0 + after) / 2.0
    cube = _money_cube(state)
    if dice is None:
        equity = cubeful_before_roll(probabilities(board), cube)
    else:
        opponent = cube.for_opponent()
        equity = equity_after_roll(
            board,
            dice,
            lambda b: cubeful_before_roll(probabilities(b), opponent),
            gammons=cube.gammons_count,
        )
    return (1.0 + equity / 3.0) / 2.0


def _money_cube(state: MatchIdState) -> MoneyCube:
    """The cube as the on-roll player sees it; dead once no double is possible (the cap)."""
    can_double = state.cube_value * 2 <= DEFAULT_CAP
    if not can_double:
        access = CubeAccess.DEAD
    elif state.cube_owner is None:
        access = CubeAccess.CENTRED
    elif state.cube_owner == state.on_roll:
        access = CubeAccess.OWNED
    else:
        access = CubeAccess.UNAVAILABLE
    return MoneyCube(access, can_double, jacoby=state.jacoby)
