"""Legal plays, pure-Python reference: every rule written out plainly, fast path checked against it.

A play is the whole move of one turn: the single-die steps of checkers, the board
they leave, and the gnubg notation. Rules applied here:

- a checker on the bar must enter before any other checker moves;
- a checker lands on an empty point, its own point or an opponent's blot (hitting it);
- bearing off needs every checker home: an exact die, or a higher die from the
  highest occupied point;
- both dice are played when possible; if only one can be, it is; if either can but
  not both, the higher one; with doubles, as many of the four as possible;
- plays are deduplicated by the position they leave (the first step order found wins).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from services.backgammon.board import BAR, HOME_POINTS, POINTS, Board, Side
from services.backgammon.errors import IllegalPlay, InvalidDice
from services.backgammon.notation import Step, format_play, parse_moves

Dice = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Play:
    """One legal way to play a roll: its steps, the resulting board (mover's view) and text."""

    steps: tuple[Step, ...]
    result: Board
    notation: str

    @property
    def dice_used(self) -> int:
        return len(self.steps)


def check_dice(dice: Sequence[int]) -> Dice:
    """Validate a roll of two dice, returning it as a tuple."""
    if len(dice) != 2:
        raise InvalidDice(f"a roll is two dice, got {len(dice)}")
    try:
        d1, d2 = int(dice[0]), int(dice[1])
    except (TypeError, ValueError) as exc:
        raise InvalidDice(
            f"dice must be whole numbers 1..6, got {dice[0]!r} and {dice[1]!r}"
        ) from exc
    if not (1 <= d1 <= 6 and 1 <= d2 <= 6):
        raise InvalidDice(f"dice must be 1..6, got {d1} and {d2}")
    return d1, d2


def single_moves(board: Board, die: int) -> Iterator[tuple[Step, Board]]:
    """Every legal movement of one checker by ``die`` pips, with the board it leaves."""
    me, them = board.player, board.opponent
    sources = [BAR] if me[BAR] else [i for i in range(POINTS - 1, -1, -1) if me[i]]
    all_home = not any(me[HOME_POINTS:])
    highest = sources[0] if sources else -1
    for src in sources:
        dest = src - die
        if dest >= 0:
            if them[POINTS - 1 - dest] >= 2:
                continue
        elif not all_home or (dest < -1 and src != highest):
            continue
        yield (src + 1, max(dest, -1) + 1), _move_checker(me, them, src, dest)


def _move_checker(me: Side, them: Side, src: int, dest: int) -> Board:
    mine = list(me)
    mine[src] -= 1
    if dest < 0:
        return Board.trusted(tuple(mine), them)
    mine[dest] += 1
    target = POINTS - 1 - dest
    if them[target] != 1:
        return Board.trusted(tuple(mine), them)
    theirs = list(them)
    theirs[target] = 0
    theirs[BAR] += 1
    return Board.trusted(tuple(mine), tuple(theirs))


def _deepest_frontier(
    board: Board, order: Sequence[int]
) -> tuple[int, dict[Board, tuple[Step, ...]]]:
    """Positions reachable playing the dice in ``order`` as far as possible, and how far."""
    frontier: dict[Board, tuple[Step, ...]] = {board: ()}
    used = 0
    for die in order:
        reached: dict[Board, tuple[Step, ...]] = {}
        for position, steps in frontier.items():
            for step, after in single_moves(position, die):
                reached.setdefault(after, (*steps, step))
        if not reached:
            break
        frontier, used = reached, used + 1
    return used, frontier


def legal_plays(board: Board, dice: Sequence[int]) -> list[Play]:
    """All legal plays for ``board.player`` rolling ``dice``; empty when none can be played."""
    return [
        Play(steps, after, format_play(board, steps))
        for after, steps in _legal_steps(board, dice).items()
    ]


def legal_results(board: Board, dice: Sequence[int]) -> list[Board]:
    """The positions :func:`legal_plays` leave, in its order, without writing their notation
    (for a caller that needs only where the plays lead)."""
    return list(_legal_steps(board, dice))


def _legal_steps(board: Board, dice: Sequence[int]) -> dict[Board, tuple[Step, ...]]:
    """Each position a legal play leaves, with the steps of the first play found to leave it;
    empty when none can be played."""
    d1, d2 = check_dice(dice)
    high, low = max(d1, d2), min(d1, d2)
    orders = [(high,) * 4] if high == low else [(high, low), (low, high)]
    best = 0
    results: dict[Board, tuple[Step, ...]] = {}
    for order in orders:
        used, frontier = _deepest_frontier(board, order)
        # A longer play beats a shorter one; at equal length the earlier order (higher die
        # first) wins, which is exactly the higher-die rule when only one die can be played.
        if used > best:
            best, results = used, dict(frontier)
        elif used == best and used >= 2:
            for after, steps in frontier.items():
                results.setdefault(after, steps)
    return results if best else {}


def result_of_moves(board: Board, moves: Sequence[tuple[int, int]]) -> Board:
    """Apply checker movements literally (hitting at each end point); no legality check."""
    me, them = list(board.player), list(board.opponent)
    for start, end in moves:
        src = BAR if start == 25 else start - 1
        if me[src] == 0:
            raise IllegalPlay(f"no checker of yours on {'the bar' if src == BAR else start}")
        me[src] -= 1
        if end == 0:
            continue
        me[end - 1] += 1
        target = POINTS - end
        if them[target] >= 2:
            raise IllegalPlay(f"point {end} is held by the opponent")
        if them[target] == 1:
            them[target] = 0
            them[BAR] += 1
    return Board(tuple(me), tuple(them))


def find_play(
    board: Board, dice: Sequence[int], text: str, plays: Sequence[Play] | None = None
) -> Play:
    """The legal play that ``text`` (gnubg notation) describes, or :class:`IllegalPlay`."""
    candidates = list(plays) if plays is not None else legal_plays(board, dice)
    if not candidates:
        if text.strip() in ("", "-"):
            raise IllegalPlay("the roll cannot be played: the turn passes without a play")
        raise IllegalPlay(f"no legal play exists for {dice}; {text!r} cannot be played")
    target = result_of_moves(board, parse_moves(text))
    for play in candidates:
        if play.result == target:
            return play
    options = ", ".join(p.notation for p in candidates[:8])
    more = "" if len(candidates) <= 8 else f" (and {len(candidates) - 8} more)"
    raise IllegalPlay(f"{text!r} is not a legal play of {dice}; legal plays: {options}{more}")
