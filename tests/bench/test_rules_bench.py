"""Move-generation benchmark against gnubg-nn on the wildbg positions (`make bench`).

Prints calls per second for both engines and their ratio per set, plus the JSON line
`tavla bench rules` prints. Asserts only correctness: the play counts of the issue.
"""

from __future__ import annotations

import json

from services.backgammon import bench


def test_rules_benchmark_prints_rates_and_has_the_expected_counts() -> None:
    rates, counts = bench.run(rounds=3)
    for key, rate in rates.items():
        print(
            f"\nrules {key:15} ours {rate.ours:>10.0f} calls/s  "
            f"gnubg-nn {rate.gnubg:>10.0f} calls/s  ratio {rate.ratio:.2f}"
        )
    print(json.dumps({key: rate.as_dict() for key, rate in rates.items()}))
    assert counts == bench.EXPECTED_COUNTS
    assert set(rates) == set(bench.EXPECTED_COUNTS)
