"""The seating draw: committed, reproducible, verifiable, a permutation, and uniform."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from collections.abc import Iterator

import pytest

from services.tournaments.domain.draw import (
    DrawError,
    DrawVerificationError,
    SeatingRecord,
    commitment,
    seating_order,
    verify_seating,
)

SEED = bytes(range(32))
EIGHT = ("acc-h", "acc-c", "acc-a", "acc-f", "acc-b", "acc-g", "acc-e", "acc-d")


def documented_draw(seed: bytes, tournament_id: str, entrants: list[str]) -> tuple[str, ...]:
    """The method as the module's docstring states it, written out independently."""

    def stream() -> Iterator[int]:
        block = 0
        while True:
            message = f"tournament:{tournament_id}:seating:{block}".encode()
            yield from hmac.new(seed, message, hashlib.sha256).digest()
            block += 1

    data = stream()
    order = sorted(entrants)
    for i in range(len(order) - 1, 0, -1):
        while True:
            word = int.from_bytes(bytes(next(data) for _ in range(4)), "big")
            if word < 2**32 - 2**32 % (i + 1):
                break
        j = word % (i + 1)
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def test_the_commitment_is_the_seeds_sha256() -> None:
    assert commitment(SEED) == hashlib.sha256(SEED).hexdigest()


def test_the_draw_is_the_documented_method() -> None:
    for size in (2, 5, 8, 33, 1024):
        entrants = [f"acc-{n:04d}" for n in range(size)]
        assert seating_order(SEED, "t-1", entrants) == documented_draw(SEED, "t-1", entrants)


def test_the_same_seed_and_entrants_give_the_same_draw_in_any_registration_order() -> None:
    first = seating_order(SEED, "t-1", EIGHT)
    assert seating_order(SEED, "t-1", reversed(EIGHT)) == first
    assert seating_order(SEED, "t-1", sorted(EIGHT)) == first


def test_every_entrant_is_seated_exactly_once() -> None:
    order = seating_order(SEED, "t-1", EIGHT)
    assert sorted(order) == sorted(EIGHT)
    assert len(set(order)) == len(EIGHT)


def test_another_seed_or_tournament_draws_otherwise() -> None:
    first = seating_order(SEED, "t-1", EIGHT)
    assert seating_order(bytes(32), "t-1", EIGHT) != first
    assert seating_order(SEED, "t-2", EIGHT) != first


def test_a_published_seating_verifies_and_a_tampered_one_does_not() -> None:
    order = seating_order(SEED, "t-1", EIGHT)
    record = SeatingRecord("t-1", commitment(SEED), SEED, order)
    verify_seating(record)
    verify_seating(SeatingRecord("t-1", commitment(SEED).upper(), SEED, order))
    swapped = (order[1], order[0], *order[2:])
    with pytest.raises(DrawVerificationError, match="another seating"):
        verify_seating(SeatingRecord("t-1", commitment(SEED), SEED, swapped))
    with pytest.raises(DrawVerificationError, match="does not match the published commitment"):
        verify_seating(SeatingRecord("t-1", commitment(SEED), bytes(32), order))


def test_the_draw_is_uniform() -> None:
    # 6,000 seeds over 3 entrants: each of the 6 orders about 1,000 times. Chi-square
    # with 5 degrees of freedom stays below 20.5 with probability 0.999.
    counts = Counter(
        seating_order(hashlib.sha256(str(n).encode()).digest(), "t-u", ("a", "b", "c"))
        for n in range(6000)
    )
    assert len(counts) == 6
    chi_square = sum((c - 1000) ** 2 / 1000 for c in counts.values())
    assert chi_square < 20.5


@pytest.mark.parametrize(
    ("seed", "tournament_id", "entrants", "reason"),
    [
        (b"short", "t-1", EIGHT, "32 random bytes, not 5"),
        (SEED, "", EIGHT, "tournament's id"),
        (SEED, "t-1", ("a", "b", "a"), "more than once"),
        (SEED, "t-1", ("a", ""), "empty"),
    ],
)
def test_a_draw_that_cannot_be_made_is_refused(
    seed: bytes, tournament_id: str, entrants: tuple[str, ...], reason: str
) -> None:
    with pytest.raises(DrawError, match=reason):
        seating_order(seed, tournament_id, entrants)
