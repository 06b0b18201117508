"""How `make test` splits the suite over its workers (tests/conftest.py): the files it
names exist, each test lands in the work unit meant for it, and the units start in the
order that keeps the longest from ending the run alone.

A renamed end-to-end file would otherwise quietly fall into the second stack group, and a
renamed long file would start late: this fails instead.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from tests import conftest as suite
from tests.e2e import test_dev_lifecycle

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_the_layout_names_exists() -> None:
    named = suite.E2E_FIRST_STACK | suite.E2E_OWN_STACKS | suite.LONG_FILES
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
    assert all(path.startswith(f"{suite.E2E}/") for path in suite.E2E_OWN_STACKS)


def test_a_test_goes_with_its_file_or_its_stack_group() -> None:
    unit = suite._work_unit
    assert unit("tests/unit/wallet/test_ledger.py::test_a[1]") == "tests/unit/wallet/test_ledger.py"
    assert unit("tests/integration/test_chaos.py::test_x") == "tests/integration/test_chaos.py"
    assert unit("tests/e2e/test_web_client.py::test_x") == "tests/e2e (stack 1)"
    assert unit("tests/e2e/test_tournament_sit_and_go_done.py::t") == "tests/e2e (stack 1)"
    assert unit("tests/e2e/test_api_contract.py::test_x") == "tests/e2e (stack 2)"
    assert unit("tests/e2e/test_a_new_file.py::test_x") == "tests/e2e (stack 2)"
    assert unit("tests/e2e/test_dev_lifecycle.py::test_x") == "tests/e2e/test_dev_lifecycle.py"


def test_the_stacks_of_their_own_share_nothing_with_the_stack_groups() -> None:
    """The lifecycle file is a unit of its own, so its tests must not use the shared stack
    (they would start one more on whichever worker runs them)."""
    tests = [f for name, f in vars(test_dev_lifecycle).items() if name.startswith("test_")]
    assert len(tests) == 6
    for test in tests:
        assert "dev_stack" not in inspect.signature(test).parameters, test.__name__


def test_work_starts_longest_first_and_the_unit_files_fill_the_end() -> None:
    order = suite._StartOrder()
    # As xdist inserts them: by test count, most first.
    for scope in ("tests/unit/a.py", "tests/e2e (stack 2)", "tests/integration/b.py",
                  "tests/e2e/test_dev_lifecycle.py", "tests/unit/c.py",
                  "tests/integration/test_chaos.py", "tests/e2e (stack 1)",
                  "tests/integration/d.py"):  # fmt: skip
        order[scope] = {}
    assert list(order) == [
        "tests/e2e (stack 2)", "tests/e2e (stack 1)", "tests/integration/test_chaos.py",
        "tests/e2e/test_dev_lifecycle.py", "tests/integration/b.py", "tests/integration/d.py",
        "tests/unit/a.py", "tests/unit/c.py",
    ]  # fmt: skip
