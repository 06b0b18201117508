"""Dice fairness over a million rolls: chi-square of faces and of the 36 ordered rolls."""

from __future__ import annotations

from collections import Counter

from services.backgammon import dice

ROLLS = 1_000_000
# 0.999 quantiles of chi-square: 5 degrees of freedom (faces), 35 (ordered pairs).
FACES_LIMIT = 20.52
PAIRS_LIMIT = 66.62


def test_a_million_rolls_are_uniform() -> None:
    seed = bytes.fromhex("5a" * 32)  # fixed, so a run can be reproduced exactly
    faces: Counter[int] = Counter()
    pairs: Counter[tuple[int, int]] = Counter()
    for number in range(ROLLS):
        roll = dice.roll(seed, "bench", number)
        pairs[roll] += 1
        faces[roll[0]] += 1
        faces[roll[1]] += 1
    face_chi = dice.chi_square([face for face, n in faces.items() for _ in range(n)])
    expected_pair = ROLLS / 36
    pair_chi = sum((n - expected_pair) ** 2 / expected_pair for n in pairs.values())
    print(
        f"\ndice {ROLLS} rolls: faces chi2 {face_chi:.2f} (5 df), pairs chi2 {pair_chi:.2f} (35 df)"
    )
    assert len(pairs) == 36
    assert face_chi < FACES_LIMIT
    assert pair_chi < PAIRS_LIMIT
