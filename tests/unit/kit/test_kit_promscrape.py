"""A benchmark's reading of a service's histograms: windows, quantiles, shares."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Histogram, generate_latest

from services.kit.promscrape import EMPTY, parse_histogram


def exposition(observations: dict[str, list[float]]) -> str:
    registry = CollectorRegistry()
    histogram = Histogram("call_seconds", "d", ["method"], buckets=(0.001, 0.005, 0.01),
                          registry=registry)  # fmt: skip
    for method, values in observations.items():
        for value in values:
            histogram.labels(method).observe(value)
    return generate_latest(registry).decode()


def test_only_the_matching_series_are_read() -> None:
    text = exposition({"a": [0.0005] * 3, "b": [0.5] * 7})
    counts = parse_histogram(text, "call_seconds", {"method": "a"})
    assert counts.count == 3
    assert counts.bounds == (0.001, 0.005, 0.01, math.inf)
    assert parse_histogram(text, "call_seconds", {"method": "c"}) == EMPTY
    assert parse_histogram(text, "other_seconds", {}) == EMPTY


def test_a_window_is_the_difference_of_two_readings() -> None:
    before = parse_histogram(exposition({"a": [0.02] * 10}), "call_seconds", {})
    after = parse_histogram(exposition({"a": [0.02] * 10 + [0.003] * 4}), "call_seconds", {})
    window = after.since(before)
    assert window.count == 4
    assert window.share_within(0.005) == 1.0
    assert after.since(EMPTY) == after


def test_quantiles_interpolate_inside_their_bucket_and_shares_are_exact() -> None:
    # 50 under 1 ms, 45 between 1 and 5 ms, 5 over 10 ms.
    values = [0.0005] * 50 + [0.003] * 45 + [0.02] * 5
    counts = parse_histogram(exposition({"a": values}), "call_seconds", {})
    assert counts.quantile(0.5) == 0.001  # the 50th of 100 is the first bucket's last
    assert abs(counts.quantile(0.9) - (0.001 + 0.004 * 40 / 45)) < 1e-12
    assert counts.quantile(0.99) == 0.01  # past the last finite bound: that bound
    assert counts.share_within(0.005) == 0.95
    assert counts.above(0.005) == 5
    assert abs(counts.total - sum(values)) < 1e-9
    assert EMPTY.quantile(0.99) == 0.0 and EMPTY.share_within(0.005) == 0.0
