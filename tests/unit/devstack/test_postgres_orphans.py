"""Collecting orphaned relocated data directories while other processes do the same."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.kit.devstack import postgres


def _aged(path: Path) -> None:
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_an_entry_removed_by_another_process_mid_listing_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "relocated"
    root.mkdir()
    orphan = root / "orphan"
    orphan.mkdir()
    (root / "orphan.origin").write_text(str(tmp_path / "gone-temp-dir" / "pgdata"))
    _aged(orphan)
    vanished = root / "vanished"  # listed, then removed by a concurrent collector

    monkeypatch.setattr(postgres, "RELOCATION_ROOT", root)
    real_iterdir = Path.iterdir

    def listing_with_a_vanished_entry(self: Path) -> Iterator[Path]:
        if self == root:
            yield vanished
        yield from real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", listing_with_a_vanished_entry)

    postgres._collect_orphans()

    assert not orphan.exists()  # the rest of the listing was still collected
    assert not (root / "orphan.origin").exists()


def test_live_and_recent_directories_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "relocated"
    root.mkdir()
    live = root / "live"
    live.mkdir()
    origin = tmp_path / "pgdata"
    origin.symlink_to(live, target_is_directory=True)
    (root / "live.origin").write_text(str(origin))
    _aged(live)
    recent = root / "recent"
    recent.mkdir()
    monkeypatch.setattr(postgres, "RELOCATION_ROOT", root)

    postgres._collect_orphans()

    assert live.exists() and recent.exists()


def test_a_discarded_tree_leaves_its_path_at_once_and_is_deleted_in_the_background(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "pgdata"
    (tree / "base" / "1").mkdir(parents=True)
    for index in range(200):
        (tree / "base" / "1" / str(index)).write_bytes(b"x" * 8192)

    postgres.discard(tree)

    assert not tree.exists()  # free for a new server at once
    deadline = time.monotonic() + 30
    while list(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.iterdir()) == []  # and nothing left once the rm is done


def test_discarding_what_is_not_there_is_not_an_error(tmp_path: Path) -> None:
    postgres.discard(tmp_path / "never-made")
    assert list(tmp_path.iterdir()) == []
