"""Precision, recall and false-positive rate per detector, on accounts (pure).

An account is *positive* for a detector when the simulator gave it that label
(it did the restricted thing), and *flagged* when at least one alert of the
detector's kind names it among its subjects (any severity, any status: a
dismissed alert was still raised). Over the simulated accounts only (officers and
anything else on a shared stack are left out):

- precision = flagged positives / flagged (1.0 when nothing is flagged: no false alarm);
- recall = flagged positives / positives (1.0 when there are no positives);
- false-positive rate = flagged negatives / negatives (0.0 when there are no negatives);
- each of recall and false-positive rate with its 95 % Wilson interval (``wilson.py``):
  the goal is judged on the interval's far end (recall's low, the rate's high), since a
  rate of 0 out of 20 negatives bounds nothing.

Runs of several seeds are pooled (``pool``): each detector's counts summed, its rates
and intervals those of the sums, so the interval narrows with every seed added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation.wilson import wilson_interval


@dataclass(frozen=True)
class DetectorScore:
    positives: int
    negatives: int
    true_positives: int
    false_positives: int

    @property
    def precision(self) -> float:
        flagged = self.true_positives + self.false_positives
        return self.true_positives / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.positives if self.positives else 1.0

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.negatives if self.negatives else 0.0

    @property
    def recall_interval(self) -> tuple[float, float]:
        return wilson_interval(self.true_positives, self.positives)

    @property
    def false_positive_rate_interval(self) -> tuple[float, float]:
        return wilson_interval(self.false_positives, self.negatives)

    def as_json(self) -> dict[str, object]:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "false_positive_rate": round(self.false_positive_rate, 4),
            "recall_95": [round(x, 4) for x in self.recall_interval],
            "false_positive_rate_95": [round(x, 4) for x in self.false_positive_rate_interval],
            "positives": self.positives,
            "negatives": self.negatives,
            "true_positives": self.true_positives,
            "false_positives": self.false_positives,
        }

    def meets(self, recall: float, false_positive_rate: float) -> bool:
        """The goal on the interval: recall at least ``recall`` and the false-positive
        rate's upper 95 % bound at most ``false_positive_rate``."""
        return (self.recall >= recall
                and self.false_positive_rate_interval[1] <= false_positive_rate)


def score(
    labels: Mapping[str, Iterable[Detector]], flagged: Mapping[Detector, Iterable[str]]
) -> dict[Detector, DetectorScore]:
    """Each detector's score over the accounts of ``labels`` (account -> its labels)."""
    accounts = set(labels)
    scores: dict[Detector, DetectorScore] = {}
    for detector in Detector:
        positive = {a for a, marks in labels.items() if detector in set(marks)}
        raised = set(flagged.get(detector, ())) & accounts
        scores[detector] = DetectorScore(
            positives=len(positive),
            negatives=len(accounts - positive),
            true_positives=len(raised & positive),
            false_positives=len(raised - positive),
        )
    return scores


def pool(runs: Iterable[Mapping[Detector, DetectorScore]]) -> dict[Detector, DetectorScore]:
    """Each detector's score over all ``runs`` at once: positives, negatives, found and
    false alarms summed (the accounts of different seeds are different accounts)."""
    pooled = {d: DetectorScore(0, 0, 0, 0) for d in Detector}
    for run in runs:
        for detector, part in run.items():
            total = pooled[detector]
            pooled[detector] = DetectorScore(
                positives=total.positives + part.positives,
                negatives=total.negatives + part.negatives,
                true_positives=total.true_positives + part.true_positives,
                false_positives=total.false_positives + part.false_positives,
            )
    return pooled


def result_line(scores: Mapping[Detector, DetectorScore]) -> dict[str, object]:
    """The object ``tavla abuse eval`` prints last: every detector, in the enum's order."""
    return {"detectors": {d.value: scores[d].as_json() for d in Detector}}
