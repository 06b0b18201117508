"""One-sided bear-off database: exact roll-count distributions for up to 15 checkers at home.

A one-sided position is the checkers one player has left on their own points 1..6
(54,264 of them, from none to fifteen). For each, the database holds, like GNU
Backgammon's ``gnubg_os0.bd``:

- ``rolls``: the probability that bearing off *all* checkers takes exactly ``n`` rolls,
  each roll played to minimise the expected number of rolls;
- ``first_off``: the same for bearing off the *first* checker (what saving or winning
  a gammon turns on), each roll played to minimise that expectation instead. A side
  that has already borne a checker off needs 0 rolls.

Generation is a dynamic programme over positions in order of pip count (every play
lowers it): for each die, the best single-checker step is tabled, then two- and
three-step continuations of the same die, so a roll's best play is a minimum over a
few table entries rather than a full move generation. Levels are built on demand up
to the pip count asked for, so small positions cost next to nothing; the whole
database takes a few seconds in pure Python (``python -m services.backgammon.bearoff``
times it). The module's only I/O is :func:`cached_database`'s optional cache file
(about 6 MB, outside the repository, with a lock file beside it so that processes asking
at once build it once); :func:`default_database` is shared per process.
Two-sided figures built on it are in :mod:`services.backgammon.bearoff_eval`.
"""

from __future__ import annotations

import fcntl
import os
from array import array
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from services.backgammon.board import CHECKERS, HOME_POINTS

Home = tuple[int, ...]  # checkers on the side's own points 1..6 (index 0 = the 1-point)

EMPTY: Home = (0,) * HOME_POINTS
MAX_PIPS = CHECKERS * HOME_POINTS
DICE = range(1, 7)
# The 21 distinct rolls and how many of the 36 equally likely throws give each.
ROLLS: tuple[tuple[int, int, int], ...] = tuple(
    (high, low, 1 if high == low else 2) for high in DICE for low in range(1, high + 1)
)


@dataclass(frozen=True, slots=True)
class Distribution:
    """P(exactly ``n`` rolls) for ``n`` from ``start``; ``probabilities[i]`` is n = start + i."""

    start: int
    probabilities: tuple[float, ...]

    def at(self, rolls: int) -> float:
        index = rolls - self.start
        return self.probabilities[index] if 0 <= index < len(self.probabilities) else 0.0

    @property
    def mean(self) -> float:
        return sum((self.start + i) * p for i, p in enumerate(self.probabilities))

    @property
    def end(self) -> int:
        """One past the largest roll count with a non-zero probability."""
        return self.start + len(self.probabilities)


CACHE_FILE = "bearoff-one-sided-v1.bin"
LOCK_FILE = CACHE_FILE + ".lock"
DONE = Distribution(0, (1.0,))
_MAGIC = b"tavla one-sided bear-off v1\n"


@dataclass(frozen=True, slots=True)
class OneSided:
    """Both distributions of one position (see the module docstring)."""

    rolls: Distribution
    first_off: Distribution


def home_of(side: tuple[int, ...]) -> Home:
    """The home-board part of a side's 25 counts (the caller checks nothing is outside)."""
    return tuple(side[:HOME_POINTS])


def pips(home: Home) -> int:
    return sum((point + 1) * count for point, count in enumerate(home))


def single_steps(home: Home, die: int) -> list[Home]:
    """Every position one checker's move of ``die`` pips can leave (bear-off rules)."""
    occupied = [point for point in range(HOME_POINTS) if home[point]]
    if not occupied:
        return []
    highest = occupied[-1]
    results: list[Home] = []
    for point in reversed(occupied):
        after = list(home)
        after[point] -= 1
        if point + 1 > die:
            after[point - die] += 1
        elif point + 1 != die and point != highest:
            continue  # a higher die bears off only from the highest point
        results.append(tuple(after))
    return results


def _homes(points: int, checkers: int) -> list[Home]:
    """Every way to put at most ``checkers`` checkers on ``points`` points."""
    if points == 0:
        return [()]
    return [
        (count, *rest)
        for count in range(checkers + 1)
        for rest in _homes(points - 1, checkers - count)
    ]


def _positions_by_pips() -> list[list[Home]]:
    levels: list[list[Home]] = [[] for _ in range(MAX_PIPS + 1)]
    for home in _homes(HOME_POINTS, CHECKERS):
        levels[pips(home)].append(home)
    return levels


class _Criterion:
    """Best plays for one goal (fewest expected rolls to finish, or to a first checker off).

    ``mean[p]`` is the goal's expected rolls from position id ``p``; ``best[k][p * 6 + d - 1]``
    the lowest mean reachable from ``p`` by ``k + 1`` steps of die ``d``, and ``final[k]``
    the position id reaching it.
    """

    def __init__(self, size: int) -> None:
        self.mean = array("d", bytes(8 * size))
        self.best = [array("d", bytes(8 * size * 6)) for _ in range(3)]
        self.final = [array("q", bytes(8 * size * 6)) for _ in range(3)]

    def table(self, pid: int, steps: list[list[int]]) -> None:
        """Fill ``pid``'s step tables from its single steps (ids) for each die."""
        mean, best, final = self.mean, self.best, self.final
        for die in DICE:
            slot = pid * 6 + die - 1
            targets = steps[die - 1]
            if not targets:  # nothing left to move: the game is over here
                for k in range(3):
                    best[k][slot], final[k][slot] = 0.0, pid
                continue
            value, reach = min((mean[t], t) for t in targets)
            best[0][slot], final[0][slot] = value, reach
            for k in (1, 2):
                previous, previous_final = best[k - 1], final[k - 1]
                value, where = min((previous[t * 6 + die - 1], t) for t in targets)
                best[k][slot], final[k][slot] = value, previous_final[where * 6 + die - 1]

    def plays(self, steps: list[list[int]]) -> dict[int, int]:
        """Where the best play of each roll leads: position id -> number of throws (of 36)."""
        best0, final0 = self.best[0], self.final[0]
        best2, final2 = self.best[2], self.final[2]
        weights: dict[int, int] = {}
        for high, low, weight in ROLLS:
            if high == low:
                slot = high - 1
                _, reached = min((best2[t * 6 + slot], final2[t * 6 + slot]) for t in steps[slot])
            else:
                h, lo = high - 1, low - 1
                first = min((best0[t * 6 + lo], final0[t * 6 + lo]) for t in steps[h])
                second = min((best0[t * 6 + h], final0[t * 6 + h]) for t in steps[lo])
                reached = min(first, second)[1]
            weights[reached] = weights.get(reached, 0) + weight
        return weights


def _after_one_roll(weights: dict[int, int], table: list[Distribution]) -> Distribution:
    """The distribution one roll later: sum over plays' results, weighted by 36ths."""
    start = min(table[pid].start for pid in weights) + 1
    end = max(table[pid].end for pid in weights) + 1
    values = [0.0] * (end - start)
    for pid, weight in weights.items():
        entry = table[pid]
        offset = entry.start + 1 - start
        stop = offset + len(entry.probabilities)
        values[offset:stop] = [
            v + weight * p for v, p in zip(values[offset:stop], entry.probabilities, strict=True)
        ]
    return Distribution(start, tuple(v / 36.0 for v in values))


class OneSidedDatabase:
    """The one-sided database, built lazily level by level (pip count) as positions are asked."""

    def __init__(self) -> None:
        self._levels = _positions_by_pips()
        ordered = [home for level in self._levels for home in level]
        self._ids = {home: pid for pid, home in enumerate(ordered)}
        self._homes = ordered
        self._rolls: list[Distribution] = [DONE] * len(ordered)
        self._first: list[Distribution] = [DONE] * len(ordered)
        self._criteria: tuple[_Criterion, _Criterion] | None = None  # only while building
        self._built = -1  # highest pip level done

    def __len__(self) -> int:
        return len(self._homes)

    def lookup(self, home: Home) -> OneSided:
        """Both distributions of ``home`` (checkers on points 1..6, at most fifteen)."""
        pid = self._ids.get(tuple(home))
        if pid is None:
            raise ValueError(f"not a one-sided bear-off position: {home!r}")
        if self._built != MAX_PIPS:  # a loaded or finished database skips counting pips
            self.build(pips(home))
        return OneSided(self._rolls[pid], self._first[pid])

    @property
    def complete(self) -> bool:
        return self._built == MAX_PIPS

    def build(self, up_to_pips: int = MAX_PIPS) -> None:
        """Compute every position of up to ``up_to_pips`` pips (already built ones are kept)."""
        target = min(up_to_pips, MAX_PIPS)
        if target <= self._built:
            return
        if self._criteria is None:
            self._criteria = (_Criterion(len(self)), _Criterion(len(self)))
        for level in range(self._built + 1, target + 1):
            for home in self._levels[level]:
                self._compute(home, *self._criteria)
            self._built = level
        if self.complete:
            self._criteria = None  # the step tables only serve the build

    def _compute(self, home: Home, finish: _Criterion, save: _Criterion) -> None:
        pid = self._ids[home]
        steps = [[self._ids[after] for after in single_steps(home, die)] for die in DICE]
        full = sum(home) == CHECKERS
        if pid:
            self._rolls[pid] = _after_one_roll(finish.plays(steps), self._rolls)
            if full:
                self._first[pid] = _after_one_roll(save.plays(steps), self._first)
        finish.mean[pid] = self._rolls[pid].mean
        finish.table(pid, steps)
        save.mean[pid] = self._first[pid].mean
        if full:
            save.table(pid, steps)
        else:  # a checker is off already: every continuation keeps the gammon saved
            for k in range(3):
                for die in DICE:
                    save.best[k][pid * 6 + die - 1] = 0.0
                    save.final[k][pid * 6 + die - 1] = pid

    def dump(self) -> bytes:
        """The complete database as bytes (see :meth:`load`); builds it first."""
        self.build()
        shape, values = array("B"), array("d")
        for table in (self._rolls, self._first):
            for entry in table:
                shape.extend((entry.start, len(entry.probabilities)))
                values.extend(entry.probabilities)
        return _MAGIC + shape.tobytes() + values.tobytes()

    @classmethod
    def load(cls, data: bytes) -> OneSidedDatabase:
        """A complete database from :meth:`dump`'s bytes; ValueError if they are not that."""
        database = cls()
        count = len(database)
        head = len(_MAGIC) + 4 * count
        if not data.startswith(_MAGIC) or len(data) < head or (len(data) - head) % 8:
            raise ValueError("not a one-sided bear-off database dump")
        shape = array("B", data[len(_MAGIC) : head])
        values = array("d", data[head:])
        if sum(shape[1::2]) != len(values):
            raise ValueError("truncated one-sided bear-off database dump")
        cursor = 0
        for index, table in enumerate((database._rolls, database._first)):
            for pid in range(count):
                start, length = (
                    shape[2 * (index * count + pid)],
                    shape[2 * (index * count + pid) + 1],
                )
                table[pid] = Distribution(start, tuple(values[cursor : cursor + length]))
                cursor += length
        database._built = MAX_PIPS
        return database


_shared: OneSidedDatabase | None = None


def default_database() -> OneSidedDatabase:
    """The process-wide database (built lazily unless :func:`use_database` set one)."""
    global _shared
    if _shared is None:
        _shared = OneSidedDatabase()
    return _shared


def use_database(database: OneSidedDatabase) -> None:
    """Make ``database`` (e.g. loaded from a cache file) the process-wide one."""
    global _shared
    _shared = database


def cached_database(directory: Path) -> OneSidedDatabase:
    """The complete database from ``directory``'s cache file, built and written there if absent.

    The only I/O of the module. Processes asking at once (analysis workers starting
    together, parallel test workers) build it once: the others wait on a lock file beside
    it and read what the first wrote. A file that cannot be read or written is not an
    error: the database is then built in memory (a few seconds).
    """
    path = directory / CACHE_FILE
    found = _load(path)
    if found is not None:
        return found
    with _building(directory):
        found = _load(path)  # written while this process waited for the lock
        if found is not None:
            return found
        database = OneSidedDatabase()
        data = database.dump()
        try:
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(data)
            partial.replace(path)  # atomic: a concurrent reader sees all or nothing
        except OSError:
            pass
        return database


def _load(path: Path) -> OneSidedDatabase | None:
    try:
        return OneSidedDatabase.load(path.read_bytes())
    except (OSError, ValueError):
        return None


@contextmanager
def _building(directory: Path) -> Iterator[None]:
    """Held while one process builds and writes the cache file (no lock if it cannot be
    made: each process then builds its own, as without one)."""
    with ExitStack() as stack:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            lock: IO[str] | None = stack.enter_context((directory / LOCK_FILE).open("a"))
        except OSError:
            lock = None
        if lock is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        yield


def one_sided(home: Home) -> OneSided:
    """Both distributions of ``home`` from the shared database."""
    return default_database().lookup(home)


def main(argv: list[str] | None = None) -> None:
    """Build the whole database and print how long it took; ``--write DIR`` caches it there."""
    import argparse
    import time

    parser = argparse.ArgumentParser(prog="python -m services.backgammon.bearoff")
    parser.add_argument("--write", type=Path, metavar="DIR", help="write the cache file in DIR")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.write is not None:
        database = cached_database(args.write)
        if not (args.write / CACHE_FILE).is_file():
            raise SystemExit(f"could not write {args.write / CACHE_FILE}")
    else:
        database = OneSidedDatabase()
        database.build()
    elapsed = time.perf_counter() - started
    full = database.lookup((0, 0, 0, 0, 0, CHECKERS))
    print(
        f"{len(database)} positions in {elapsed:.2f} s; 15 on the 6-point: "
        f"{full.rolls.mean:.4f} rolls to bear off, {full.first_off.mean:.4f} to the first checker"
    )


if __name__ == "__main__":
    main()
