"""The Wilson interval, against figures worked by hand from the formula (z = 1.96)."""

from __future__ import annotations

import pytest

from services.antiabuse.evaluation.wilson import wilson_interval


def test_none_of_500_is_bounded_by_z_squared_over_n_plus_z_squared() -> None:
    # p = 0: centre = half = (z^2 / 2n) / (1 + z^2 / n); high = z^2 / (n + z^2)
    # = 3.8415 / 503.8415 = 0.0076244.
    low, high = wilson_interval(0, 500)
    assert low == 0.0
    assert high == pytest.approx(0.0076244, abs=1e-6)


def test_nine_of_ten() -> None:
    # p = 0.9, z^2 / n = 0.38415, denominator 1.38415; centre = (0.9 + 0.19207) / 1.38415
    # = 0.78899; half = 1.96 sqrt(0.009 + 0.0096037) / 1.38415 = 0.19314.
    low, high = wilson_interval(9, 10)
    assert low == pytest.approx(0.5958, abs=1e-4)
    assert high == pytest.approx(0.9821, abs=1e-4)


def test_all_of_twenty() -> None:
    # p = 1: low = 1 / (1 + z^2 / n) = 1 / 1.19207 = 0.83887, high 1.
    low, high = wilson_interval(20, 20)
    assert low == pytest.approx(0.83887, abs=1e-5)
    assert high == pytest.approx(1.0)


def test_half_of_a_hundred_is_symmetric() -> None:
    # p = 0.5: centre 0.5; half = 1.96 sqrt(0.0025 + 0.000096) / 1.038415 = 0.096170.
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.40383, abs=1e-5)
    assert high == pytest.approx(0.59617, abs=1e-5)


def test_no_trials_says_nothing_and_nonsense_is_refused() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 5)
