"""A benchmark's reading of a service's own histograms from its /metrics endpoint.

A benchmark's client measures a call from the outside, its own delays included;
the service's histograms say what the service itself saw. :func:`scrape_histogram`
reads one histogram (its series matching some labels, added up) and
:meth:`HistogramCounts.since` makes the counts of a window from two readings.
Quantiles are interpolated linearly inside a bucket, as Prometheus's
``histogram_quantile`` does, so they are only as fine as the buckets; the share of
observations under a bucket's bound is exact.
"""

from __future__ import annotations

import math
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class HistogramCounts:
    """Cumulative counts per upper bound (``+Inf`` last), and the sum of the observations."""

    bounds: tuple[float, ...]
    cumulative: tuple[float, ...]
    total: float

    @property
    def count(self) -> int:
        return int(self.cumulative[-1]) if self.cumulative else 0

    def since(self, earlier: HistogramCounts) -> HistogramCounts:
        """The observations made between ``earlier`` and this reading."""
        if not earlier.bounds:
            return self
        counts = tuple(a - b for a, b in zip(self.cumulative, earlier.cumulative, strict=True))
        return HistogramCounts(self.bounds, counts, self.total - earlier.total)

    def share_within(self, bound: float) -> float:
        """The share of observations at most ``bound`` (exact when it is a bucket bound)."""
        if not self.count:
            return 0.0
        return self._cumulative_at(bound) / self.count

    def quantile(self, fraction: float) -> float:
        """The ``fraction`` quantile, interpolated in its bucket (the largest finite bound
        when it falls in the ``+Inf`` bucket; 0 with no observations)."""
        if not self.count:
            return 0.0
        rank = fraction * self.count
        lower_bound, lower_count = 0.0, 0.0
        for bound, cumulative in zip(self.bounds, self.cumulative, strict=True):
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower_bound
                inside = cumulative - lower_count
                return lower_bound + (bound - lower_bound) * (rank - lower_count) / inside
            lower_bound, lower_count = bound, cumulative
        return lower_bound

    def above(self, bound: float) -> int:
        """How many observations exceeded ``bound`` (a bucket bound)."""
        return int(self.count - self._cumulative_at(bound))

    def _cumulative_at(self, bound: float) -> float:
        below = [c for b, c in zip(self.bounds, self.cumulative, strict=True) if b <= bound]
        return below[-1] if below else 0.0


EMPTY = HistogramCounts((), (), 0.0)


def parse_histogram(text: str, name: str, labels: dict[str, str]) -> HistogramCounts:
    """The histogram ``name``'s series whose labels include ``labels``, added up."""
    by_bound: dict[float, float] = {}
    total = 0.0
    for family in text_string_to_metric_families(text):
        if family.name != name or family.type != "histogram":
            continue
        for sample in family.samples:
            if any(sample.labels.get(key) != value for key, value in labels.items()):
                continue
            if sample.name == f"{name}_bucket":
                bound = float(sample.labels["le"])
                by_bound[bound] = by_bound.get(bound, 0.0) + sample.value
            elif sample.name == f"{name}_sum":
                total += sample.value
    if not by_bound:
        return EMPTY
    bounds = tuple(sorted(by_bound))
    return HistogramCounts(bounds, tuple(by_bound[b] for b in bounds), total)


def scrape(port: int, host: str = "127.0.0.1") -> str:
    """The text of a process's /metrics."""
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as reply:
        return str(reply.read().decode())


def scrape_histogram(port: int, name: str, **labels: str) -> HistogramCounts:
    return parse_histogram(scrape(port), name, labels)
