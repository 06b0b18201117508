"""Provably fair dice: commit to sha256(server seed), derive rolls by HMAC, reveal, verify.

At the start of a game the server picks a secret ``server_seed`` (32 random bytes,
chosen by the caller: this module does no I/O) and publishes
``commitment = sha256(server_seed)``. Roll ``n`` (0, 1, 2, ...) is derived from the
byte stream ``HMAC-SHA256(server_seed, f"{client_seed}:{n}:{block}")`` for block
0, 1, ...: each byte below 252 gives a die ``byte % 6 + 1`` and bytes 252..255 are
skipped (rejection sampling, so every face has probability exactly 1/6). The
opening roll uses roll numbers too: die 1 is player 0's, die 2 player 1's, and a
tie moves on to the next roll number. When the game ends the seed is revealed and
anyone can run :func:`verify`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from services.backgammon.errors import DiceVerificationError

_ACCEPT_BELOW = 252  # the largest multiple of 6 not above 256


def commitment(server_seed: bytes) -> str:
    """The hex sha256 of the server seed, published before the first roll."""
    return hashlib.sha256(server_seed).hexdigest()


def byte_stream(server_seed: bytes, label: str) -> Iterator[int]:
    """The bytes of ``HMAC-SHA256(server_seed, f"{label}:{block}")`` for block 0, 1, ...

    The one source of fair randomness from a committed seed: the dice use it with
    the label ``f"{client_seed}:{roll_number}"``, and other draws from a committed
    seed (a tournament's seating) with labels of their own.
    """
    block = 0
    while True:
        message = f"{label}:{block}".encode()
        yield from hmac.new(server_seed, message, hashlib.sha256).digest()
        block += 1


def _die_stream(server_seed: bytes, client_seed: str, roll_number: int) -> Iterator[int]:
    for byte in byte_stream(server_seed, f"{client_seed}:{roll_number}"):
        if byte < _ACCEPT_BELOW:
            yield byte % 6 + 1


def roll(server_seed: bytes, client_seed: str, roll_number: int) -> tuple[int, int]:
    """The two dice of roll ``roll_number``."""
    if roll_number < 0:
        raise ValueError("roll numbers start at 0")
    stream = _die_stream(server_seed, client_seed, roll_number)
    return next(stream), next(stream)


def opening_roll(
    server_seed: bytes, client_seed: str, first_roll_number: int = 0
) -> tuple[int, tuple[int, int]]:
    """The first non-tied roll from ``first_roll_number``: (its roll number, (die0, die1))."""
    number = first_roll_number
    while True:
        dice = roll(server_seed, client_seed, number)
        if dice[0] != dice[1]:
            return number, dice
        number += 1


@dataclass(frozen=True, slots=True)
class DiceRecord:
    """What a finished game publishes so a player can check every roll."""

    commitment: str
    server_seed: bytes
    client_seed: str
    rolls: tuple[tuple[int, int], ...]  # rolls 0, 1, 2, ... including tied opening rolls


def verify(record: DiceRecord) -> None:
    """Raise :class:`DiceVerificationError` unless the seed matches and every roll follows."""
    if not hmac.compare_digest(commitment(record.server_seed), record.commitment.lower()):
        raise DiceVerificationError("the revealed server seed does not match the commitment")
    for number, dice in enumerate(record.rolls):
        expected = roll(record.server_seed, record.client_seed, number)
        if tuple(dice) != expected:
            raise DiceVerificationError(
                f"roll {number} was {tuple(dice)} but the seeds give {expected}"
            )


def rolls(server_seed: bytes, client_seed: str, count: int) -> list[tuple[int, int]]:
    """Rolls 0..count-1 (for building a :class:`DiceRecord` or a test)."""
    return [roll(server_seed, client_seed, n) for n in range(count)]


def chi_square(faces: Sequence[int]) -> float:
    """Pearson chi-square of die faces against the uniform distribution (5 degrees of freedom)."""
    counts = [0] * 6
    for face in faces:
        counts[face - 1] += 1
    expected = len(faces) / 6
    return sum((c - expected) ** 2 / expected for c in counts)
