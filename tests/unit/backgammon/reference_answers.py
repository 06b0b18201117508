"""The reference move generator's answers on the benchmark positions, kept between runs.

``test_bg_agreement.py`` checks the C fast path against the pure-Python reference
(``movegen``) on every benchmark position and roll (42,000 cases): the reference's search
is most of that file's CPU, and it gives the same answers on every run until its code or
the positions change. So its answers are kept in pytest's cache directory, keyed by a hash
of the reference's own sources (``movegen``, ``position_id`` and every ``services`` module
they import, followed through their imports, and ``bench``, which reads the positions), of
this file, of the positions and of the rolls: any change to one of them is a new key, and
the reference runs again.

Only the reference's answers are kept, never the fast path's: each case's answer is a
digest of the reference's plays (the board each leaves, its notation, the dice it uses),
their number and their Position IDs. A case whose fast-path digest differs from the kept
one is judged again against the reference itself, so a stale or damaged file can cost
time but never pass a disagreement.
"""

from __future__ import annotations

import ast
import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from services.backgammon.movegen import Play

REPOSITORY = Path(__file__).resolve().parents[3]
DIGEST = 16  # bytes per case


def answer(plays: Sequence[Play], ids: Iterable[str]) -> bytes:
    """One case's digest: its distinct plays (board left, dice used, notation), how many
    plays there are, and the distinct Position IDs of the boards they leave.

    Each play is written as bytes (a board is 50 counts of 0..15, one byte each; then the
    dice used; then the notation, which holds no NUL): as exact as the tuples, and about a
    quarter of their text's cost, which a run without kept answers pays on every case.
    """
    rows = sorted({
        bytes(p.result.player) + bytes(p.result.opponent) + bytes((p.dice_used,))
        + p.notation.encode()
        for p in plays
    })  # fmt: skip
    text = b"\0".join(rows) + b"\1%d\1" % len(plays) + "\0".join(sorted(set(ids))).encode()
    return hashlib.blake2b(text, digest_size=DIGEST).digest()


def _imported_sources(*modules: str) -> list[Path]:
    """The ``modules``' files and those of the ``services`` modules they import, transitively."""
    found: dict[str, Path] = {}
    pending = list(modules)
    while pending:
        name = pending.pop()
        path = REPOSITORY / (name.replace(".", "/") + ".py")
        if name in found or not path.is_file():
            continue
        found[name] = path
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("services."):
                pending.append(node.module or "")
                pending.extend(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                pending.extend(a.name for a in node.names if a.name.startswith("services."))
    return [found[name] for name in sorted(found)]


def reference_key(inputs: Sequence[Path], rolls: Sequence[tuple[int, int]]) -> str:
    """The cache key: the reference's sources (``movegen``; ``position_id``, which writes
    its results' IDs and reads the positions; ``bench``, whose ``load_positions`` reads
    them), this file, the positions' files and the rolls."""
    sources = _imported_sources("services.backgammon.movegen", "services.backgammon.position_id")
    digest = hashlib.sha256()
    for path in [*sources, REPOSITORY / "services/backgammon/bench.py", Path(__file__), *inputs]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(repr(list(rolls)).encode())
    return digest.hexdigest()[:32]


class ReferenceAnswers:
    """The kept answers for one key (``known`` is None when there are none yet)."""

    def __init__(self, config: pytest.Config, key: str, cases: int) -> None:
        cache = getattr(config, "cache", None)  # absent under `-p no:cacheprovider`
        self._path = cache.mkdir("tavla-movegen-reference") / f"{key}.bin" if cache else None
        self._cases = cases
        self.known: list[bytes] | None = None
        try:
            data = self._path.read_bytes() if self._path else b""
        except OSError:
            data = b""
        if len(data) == cases * DIGEST:
            self.known = [data[i : i + DIGEST] for i in range(0, len(data), DIGEST)]

    def keep(self, answers: Sequence[bytes]) -> None:
        """Write every case's reference answer (atomically: a concurrent reader sees all or
        nothing; a directory that cannot be written is no error)."""
        if self._path is None or len(answers) != self._cases:
            return
        partial = self._path.with_suffix(f".{os.getpid()}.tmp")
        try:
            partial.write_bytes(b"".join(answers))
            partial.replace(self._path)
            for older in self._path.parent.glob("*.bin"):  # other keys: old sources or data
                if older != self._path:
                    older.unlink(missing_ok=True)
        except OSError:
            partial.unlink(missing_ok=True)
