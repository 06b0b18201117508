"""Provably fair dice: commitment, HMAC derivation with rejection sampling, reveal and verify."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from services.backgammon import dice
from services.backgammon.dice import DiceRecord
from services.backgammon.errors import DiceVerificationError

SEED = bytes(range(32))


def test_commitment_is_the_sha256_of_the_server_seed() -> None:
    assert dice.commitment(SEED) == hashlib.sha256(SEED).hexdigest()


def test_a_roll_is_the_first_two_accepted_hmac_bytes() -> None:
    digest = hmac.new(SEED, b"player-seed:0:0", hashlib.sha256).digest()
    accepted = [b % 6 + 1 for b in digest if b < 252]
    assert dice.roll(SEED, "player-seed", 0) == (accepted[0], accepted[1])


def test_bytes_252_and_above_are_rejected() -> None:
    # Find a roll number whose digest starts with a rejected byte, and check it is skipped.
    for number in range(2000):
        digest = hmac.new(SEED, f"c:{number}:0".encode(), hashlib.sha256).digest()
        if digest[0] >= 252:
            accepted = [b % 6 + 1 for b in digest if b < 252]
            assert dice.roll(SEED, "c", number) == (accepted[0], accepted[1])
            return
    pytest.fail("no digest starting with a rejected byte in 2000 tries")


def test_rolls_depend_on_both_seeds_and_the_roll_number() -> None:
    base = dice.rolls(SEED, "a", 40)
    assert base == dice.rolls(SEED, "a", 40)
    assert base != dice.rolls(SEED, "b", 40)
    assert base != dice.rolls(bytes(32), "a", 40)
    assert all(1 <= d <= 6 for pair in base for d in pair)


def test_opening_roll_skips_ties() -> None:
    number, (die0, die1) = dice.opening_roll(SEED, "x")
    assert die0 != die1
    for earlier in range(number):
        first, second = dice.roll(SEED, "x", earlier)
        assert first == second


def _record(rolls: list[tuple[int, int]]) -> DiceRecord:
    return DiceRecord(dice.commitment(SEED), SEED, "client", tuple(rolls))


def test_verify_accepts_an_honest_game() -> None:
    dice.verify(_record(dice.rolls(SEED, "client", 30)))


def test_verify_rejects_a_changed_roll() -> None:
    rolls = dice.rolls(SEED, "client", 30)
    rolls[7] = (rolls[7][0] % 6 + 1, rolls[7][1])
    with pytest.raises(DiceVerificationError, match="roll 7"):
        dice.verify(_record(rolls))


def test_verify_rejects_a_seed_that_does_not_match_the_commitment() -> None:
    record = DiceRecord(dice.commitment(bytes(32)), SEED, "client", ())
    with pytest.raises(DiceVerificationError, match="commitment"):
        dice.verify(record)


def test_faces_are_roughly_uniform_on_a_small_sample() -> None:
    faces = [d for pair in dice.rolls(SEED, "uniform", 3000) for d in pair]
    # 5 degrees of freedom: 20.5 is the 0.999 quantile; the million-roll test is in tests/bench.
    assert dice.chi_square(faces) < 20.5
