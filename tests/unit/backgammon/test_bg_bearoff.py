"""The one-sided bear-off database against an independent brute force and basic laws.

The reference solver below recomputes expected roll counts with the pure-Python move
generator (``movegen``), which shares no code with the database's own step tables.
"""

from __future__ import annotations

import fcntl
import os
import random
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from services.backgammon import movegen
from services.backgammon.bearoff import (
    CACHE_FILE,
    EMPTY,
    LOCK_FILE,
    Home,
    OneSidedDatabase,
    cached_database,
    home_of,
    pips,
)
from services.backgammon.board import BAR, CHECKERS, Board

THROWS = [(d1, d2) for d1 in range(1, 7) for d2 in range(1, 7)]
SMALL_PIPS = 16


def board_of(home: Home) -> Board:
    return Board(tuple(home) + (0,) * (BAR + 1 - len(home)), (0,) * (BAR + 1))


def results(home: Home, dice: tuple[int, int]) -> set[Home]:
    return {home_of(play.result.player) for play in movegen.legal_plays(board_of(home), dice)}


@cache
def reference_mean(home: Home) -> float:
    """Expected rolls to bear off, each throw played to minimise it (brute force)."""
    if not sum(home):
        return 0.0
    total = sum(min(reference_mean(after) for after in results(home, dice)) for dice in THROWS)
    return 1.0 + total / 36


def small_homes(max_pips: int) -> list[Home]:
    homes = []
    for code in range(7**6):
        home = tuple((code // 7**i) % 7 for i in range(6))
        if 0 < pips(home) <= max_pips:
            homes.append(home)
    return homes


def complete_database(config: pytest.Config, tmp: pytest.TempPathFactory) -> OneSidedDatabase:
    """The whole database, kept in pytest's cache directory between runs (built once, ~8 s)."""
    cache = getattr(config, "cache", None)  # absent under `-p no:cacheprovider`
    cache_dir = cache.mkdir("tavla-bearoff") if cache else tmp.mktemp("bearoff")
    return cached_database(cache_dir)


@pytest.fixture(scope="module")
def full(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> OneSidedDatabase:
    return complete_database(request.config, tmp_path_factory)


@pytest.fixture(scope="module")
def small() -> OneSidedDatabase:
    database = OneSidedDatabase()
    database.build(SMALL_PIPS)
    return database


def test_the_database_has_every_position_of_up_to_fifteen_checkers() -> None:
    assert len(OneSidedDatabase()) == 54_264  # C(21, 6): 0..15 checkers on 6 points


def test_means_match_a_brute_force_over_the_reference_move_generator(
    small: OneSidedDatabase,
) -> None:
    homes = small_homes(SMALL_PIPS)
    assert len(homes) > 500
    for home in homes:
        assert small.lookup(home).rolls.mean == pytest.approx(reference_mean(home), abs=1e-12)


def test_one_roll_chances_match_the_dice(small: OneSidedDatabase) -> None:
    for home in ((0, 0, 0, 0, 0, 1), (0, 0, 0, 1, 0, 1), (2, 0, 0, 0, 0, 0), (0, 0, 3, 0, 0, 0)):
        finishing = sum(EMPTY in results(home, dice) for dice in THROWS)
        assert small.lookup(home).rolls.at(1) == pytest.approx(finishing / 36, abs=1e-15)


def test_distributions_are_probabilities(small: OneSidedDatabase) -> None:
    for home in small_homes(SMALL_PIPS):
        entry = small.lookup(home)
        for distribution in (entry.rolls, entry.first_off):
            assert sum(distribution.probabilities) == pytest.approx(1.0, abs=1e-12)
            assert all(0.0 <= p <= 1.0 for p in distribution.probabilities)
        assert entry.rolls.at(0) == 0.0  # checkers left: at least one roll
        assert entry.first_off.mean == 0.0  # fewer than fifteen: a checker is off already


def test_a_position_needs_at_least_its_pips_over_the_biggest_roll(small: OneSidedDatabase) -> None:
    for home in small_homes(SMALL_PIPS):
        assert small.lookup(home).rolls.start >= -(-pips(home) // 24)


def test_adding_a_checker_never_helps(small: OneSidedDatabase) -> None:
    rng = random.Random(7)
    homes = small_homes(SMALL_PIPS - 1)
    for home in rng.sample(homes, min(300, len(homes))):
        for point in range(6):
            if pips(home) + point + 1 > SMALL_PIPS:
                continue
            more = tuple(n + (i == point) for i, n in enumerate(home))
            fewer, extra = small.lookup(home).rolls, small.lookup(more).rolls
            assert extra.mean >= fewer.mean - 1e-12
            for n in range(extra.end + 1):  # stochastically slower: never more likely done by n
                done_fewer = sum(fewer.at(k) for k in range(n + 1))
                done_extra = sum(extra.at(k) for k in range(n + 1))
                assert done_extra <= done_fewer + 1e-12


def test_the_first_checker_off_from_fifteen(full: OneSidedDatabase) -> None:
    for home in ((0, 0, 0, 0, 0, 15), (15, 0, 0, 0, 0, 0), (0, 0, 5, 5, 5, 0), (3, 3, 3, 2, 2, 2)):
        first = full.lookup(home).first_off
        some_off = sum(any(sum(after) < CHECKERS for after in results(home, d)) for d in THROWS)
        assert first.at(1) == pytest.approx(some_off / 36, abs=1e-15)
        assert first.mean <= full.lookup(home).rolls.mean


def test_bearing_off_fifteen_from_the_six_point_takes_longest(full: OneSidedDatabase) -> None:
    worst = full.lookup((0, 0, 0, 0, 0, 15)).rolls.mean
    rng = random.Random(3)
    for _ in range(200):
        counts = [0] * 6
        for _ in range(rng.randint(1, CHECKERS)):
            counts[rng.randrange(6)] += 1
        assert full.lookup(tuple(counts)).rolls.mean <= worst


def test_a_dump_loads_back_identically(full: OneSidedDatabase) -> None:
    loaded = OneSidedDatabase.load(full.dump())
    assert loaded.complete
    for home in ((0, 0, 0, 0, 0, 15), (1, 2, 3, 4, 5, 0), (1, 0, 0, 0, 0, 0)):
        assert loaded.lookup(home) == full.lookup(home)
    with pytest.raises(ValueError):
        OneSidedDatabase.load(full.dump()[:-8])
    with pytest.raises(ValueError):
        OneSidedDatabase.load(b"something else")


def test_a_cache_file_is_read_instead_of_building(tmp_path: Path, full: OneSidedDatabase) -> None:
    (tmp_path / CACHE_FILE).write_bytes(full.dump())
    loaded = cached_database(tmp_path)
    assert loaded.complete
    assert loaded.lookup((0, 0, 0, 0, 0, 15)) == full.lookup((0, 0, 0, 0, 0, 15))


def test_a_process_asking_during_another_ones_build_waits_and_reads_it(
    tmp_path: Path, full: OneSidedDatabase, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process (here another open file, which flock treats alike) holds the build
    # lock: the caller waits for it, then reads the file written meanwhile, building nothing.
    data = full.dump()
    builds: list[int] = []
    monkeypatch.setattr(OneSidedDatabase, "dump", lambda self: builds.append(1) or data)
    # The lock's file is closed first on the way out: a failure here never leaves the
    # pool's thread waiting on it.
    with ThreadPoolExecutor(1) as pool, (tmp_path / LOCK_FILE).open("a") as other:
        fcntl.flock(other, fcntl.LOCK_EX)
        waiting = pool.submit(cached_database, tmp_path)
        deadline = time.monotonic() + 30
        while not _waits_for_lock(tmp_path / LOCK_FILE):  # the kernel's list of lock waiters
            assert time.monotonic() < deadline and not waiting.done(), "never waited for the lock"
            time.sleep(0.01)
        (tmp_path / CACHE_FILE).write_bytes(data)
        fcntl.flock(other, fcntl.LOCK_UN)
        loaded = waiting.result(timeout=30)
    assert loaded.complete and not builds
    assert loaded.lookup((0, 0, 0, 0, 0, 15)) == full.lookup((0, 0, 0, 0, 0, 15))


def _waits_for_lock(path: Path) -> bool:
    """Whether this process is blocked on a flock of ``path`` (a ``->`` line of /proc/locks:
    ``N: -> FLOCK ADVISORY WRITE <pid> <major>:<minor>:<inode> 0 EOF``)."""
    inode = os.stat(path).st_ino
    waiting = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    return any(
        fields[1:3] == ["->", "FLOCK"]
        and fields[-4] == str(os.getpid())
        and fields[-3].endswith(f":{inode}")
        for fields in waiting
    )
