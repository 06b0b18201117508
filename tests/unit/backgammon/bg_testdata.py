"""Shared test data for the rules library tests: board strategies and random-play positions."""

from __future__ import annotations

import random
from itertools import permutations

from hypothesis import strategies as st

from services.backgammon.board import BAR, POINTS, STARTING_BOARD, Board
from services.backgammon.movegen import single_moves
from services.backgammon.plays import legal_plays

OFF = 25  # slot value meaning "borne off" in the strategies below


def _side(slots: list[int]) -> tuple[int, ...]:
    counts = [0] * (BAR + 1)
    for slot in slots:
        if slot != OFF:
            counts[slot] += 1
    return tuple(counts)


@st.composite
def boards(draw: st.DrawFn, home_only: bool = False) -> Board:
    """Any valid position: 15 checkers a side on points, bar or off; no shared point."""
    mine_range = st.sampled_from([*range(6), BAR, OFF]) if home_only else st.integers(0, OFF)
    mine = _side(draw(st.lists(mine_range, min_size=15, max_size=15)))
    # The opponent's point i is my point 24 - i (index 23 - i): keep those free of my checkers.
    free = [i for i in range(POINTS) if not mine[POINTS - 1 - i]] + [BAR, OFF]
    theirs = _side(draw(st.lists(st.sampled_from(free), min_size=15, max_size=15)))
    return Board(mine, theirs)


dice_rolls = st.tuples(st.integers(1, 6), st.integers(1, 6))


def max_dice_usable(board: Board, dice: tuple[int, int]) -> int:
    """Brute force: the most dice any order of play can use (independent of movegen's search)."""
    orders = [(dice[0],) * 4] if dice[0] == dice[1] else list(permutations(dice))

    def deepest(position: Board, remaining: tuple[int, ...]) -> int:
        if not remaining:
            return 0
        best = 0
        for _, after in single_moves(position, remaining[0]):
            best = max(best, 1 + deepest(after, remaining[1:]))
            if best == len(remaining):
                break
        return best

    return max(deepest(board, tuple(order)) for order in orders)


def random_play_positions(seed: int, count: int) -> list[tuple[Board, tuple[int, int]]]:
    """(position, roll) pairs met in random games, the player on roll to move."""
    rng = random.Random(seed)
    found: list[tuple[Board, tuple[int, int]]] = []
    board: Board | None = None
    while len(found) < count:
        if board is None or board.is_over():
            board = STARTING_BOARD
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        found.append((board, dice))
        options = legal_plays(board, dice)
        after = rng.choice(options).result if options else board
        board = after.swapped()
    return found


def make_board(player: dict[int, int], opponent: dict[int, int]) -> Board:
    """A board from {point: checkers} per side, each in its own numbering (25 = bar)."""

    def side(spec: dict[int, int]) -> tuple[int, ...]:
        counts = [0] * (BAR + 1)
        for point, n in spec.items():
            counts[BAR if point == 25 else point - 1] = n
        return tuple(counts)

    return Board(side(player), side(opponent))


def results(board: Board, dice: tuple[int, int]) -> set[Board]:
    return {p.result for p in legal_plays(board, dice)}


def notations(board: Board, dice: tuple[int, int]) -> set[str]:
    return {p.notation for p in legal_plays(board, dice)}


def random_blocking_positions(seed: int, count: int) -> list[Board]:
    """Positions with checkers on the bar against a closed or nearly closed home board."""
    rng = random.Random(seed)
    found: list[Board] = []
    while len(found) < count:
        theirs = [0] * (BAR + 1)
        for point in rng.sample(range(6), rng.choice([5, 6])):
            theirs[point] = 2
        for _ in range(15 - sum(theirs)):
            theirs[rng.choice([*range(6, 18), BAR])] += 1
        mine = [0] * (BAR + 1)
        mine[BAR] = rng.choice([1, 1, 2, 3])
        free = [i for i in range(POINTS) if not theirs[POINTS - 1 - i]]
        for _ in range(15 - mine[BAR] - rng.randint(0, 3)):
            mine[rng.choice(free)] += 1
        found.append(Board(tuple(mine), tuple(theirs)))
    return found
