"""Random seating from a committed seed, reproducible and auditable like the dice.

The same primitive as the game's dice (``services/backgammon/dice.py``): the service
picks a secret 32-byte seed when the tournament is created and publishes
``commitment = sha256(seed)`` before registration closes; when registration has
closed the seating is drawn from the seed, and the seed is revealed with it, so
anyone can check both the commitment and the draw.

**The draw.** The entrants' account ids are sorted (so the order in which they
registered does not matter) and shuffled by Fisher-Yates: for ``i`` from ``n - 1``
down to 1, swap position ``i`` with position ``j``, a uniform number in ``0..i``.
The numbers come from the dice's byte stream ``HMAC-SHA256(seed,
f"tournament:{tournament_id}:seating:{block}")``, block 0, 1, ..., read four bytes
at a time as a big-endian unsigned integer ``w``; ``w`` is used as ``w mod (i + 1)``
when it is below the largest multiple of ``i + 1`` that fits in 32 bits and skipped
otherwise (rejection sampling, so every ``j`` is exactly equally likely). The
shuffled order fills the bracket from the top (``bracket.py``), and so decides the
byes as well.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from services.backgammon import dice
from services.kit.errors import InvalidArgument

SEED_BYTES: Final = 32
_WORD_BYTES: Final = 4
_WORDS: Final = 1 << (8 * _WORD_BYTES)


class DrawError(InvalidArgument):
    """A draw that cannot be made: no seed, no tournament id, or a bad entrant list."""


class DrawVerificationError(ValueError):
    """A published seating that its revealed seed does not produce."""


def commitment(seed: bytes) -> str:
    """The hex sha256 of the seed, published before registration closes."""
    return dice.commitment(_require_seed(seed))


def _require_seed(seed: bytes) -> bytes:
    if len(seed) != SEED_BYTES:
        raise DrawError(f"a seating seed is {SEED_BYTES} random bytes, not {len(seed)}")
    return seed


def _sorted_entrants(entrants: Iterable[str]) -> list[str]:
    listed = list(entrants)
    if any(not entrant for entrant in listed):
        raise DrawError("an entrant's account id is empty")
    unique = sorted(set(listed))
    if len(unique) != len(listed):
        raise DrawError("an entrant is listed more than once")
    return unique


def _below(stream: Iterator[int], bound: int) -> int:
    """A uniform number in ``0..bound-1`` from the byte stream (rejection sampling)."""
    accept_below = _WORDS - _WORDS % bound
    while True:
        word = int.from_bytes(bytes(next(stream) for _ in range(_WORD_BYTES)), "big")
        if word < accept_below:
            return word % bound


def seating_order(seed: bytes, tournament_id: str, entrants: Iterable[str]) -> tuple[str, ...]:
    """The entrants in the drawn order: the first fills the bracket's top seat."""
    if not tournament_id:
        raise DrawError("the draw needs the tournament's id")
    order = _sorted_entrants(entrants)
    stream = dice.byte_stream(_require_seed(seed), f"tournament:{tournament_id}:seating")
    for i in range(len(order) - 1, 0, -1):
        j = _below(stream, i + 1)
        order[i], order[j] = order[j], order[i]
    return tuple(order)


@dataclass(frozen=True, slots=True)
class SeatingRecord:
    """What a tournament publishes once registration has closed, for anyone to check."""

    tournament_id: str
    commitment: str
    seed: bytes
    order: tuple[str, ...]


def verify_seating(record: SeatingRecord) -> None:
    """Raise :class:`DrawVerificationError` unless the seed matches and gives this order."""
    if not hmac.compare_digest(commitment(record.seed), record.commitment.lower()):
        raise DrawVerificationError("the revealed seed does not match the published commitment")
    expected = seating_order(record.seed, record.tournament_id, record.order)
    if expected != record.order:
        raise DrawVerificationError(
            "the seed and the entrants give another seating than the one published"
        )
