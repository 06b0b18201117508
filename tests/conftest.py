"""Real components, started only when a test asks for them.

`postgres_server` is a real PostgreSQL 18, started once per session (each module
makes its own databases). `kafka_broker` is a real Tansu broker with the
platform's topics (deploy/topics.txt), a new one for each test module: it starts
in about a tenth of a second, and a module then never consumes another's backlog
or meets a consumer group that another module's services left in a rebalance
(Tansu 0.6, unlike Apache Kafka, can keep a group waiting on such members for
minutes). Both are on free ports with data in temp dirs; unit tests request
neither and pay nothing. Both can be stopped and started again (`stop()`,
`start()`, `restart()`) by tests that take them away; such tests must bring them
back.
"""

from __future__ import annotations

import signal
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from services.kit.devstack.broker import KafkaBroker
from services.kit.devstack.net import free_port
from services.kit.devstack.postgres import PostgresServer
from services.kit.devstack.supervisor import Supervisor

# Property tests judge results, never time: on a machine shared with other runs, an
# example's duration or a strategy's generation speed says nothing about the code.
settings.register_profile(
    "tavla", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("tavla")

E2E = "tests/e2e"
# The end-to-end files share a `tavla dev` stack (`dev_stack`, one per worker that runs
# them), in two groups of about the same time: the three longest browser tests (about
# 150 s together on an idle machine, docs/testing.md), and every other end-to-end file
# (about 155 s), which is where a new file goes unless named here. With two or more
# workers each group runs on a worker of its own, beside the other.
E2E_FIRST_STACK = frozenset({
    "tests/e2e/test_tournament_sit_and_go_done.py",
    "tests/e2e/test_web_client.py",
    "tests/e2e/test_table_stakes_web_done.py",
})
# End-to-end files whose tests each start a `tavla dev` of their own and share none:
# a work unit of their own, for whichever worker is free.
E2E_OWN_STACKS = frozenset({"tests/e2e/test_dev_lifecycle.py"})
# Files of a minute or more outside the end-to-end groups: started right after those, so
# that none of them begins late and ends the run alone.
LONG_FILES = frozenset({"tests/integration/test_chaos.py"})


def _work_unit(nodeid: str) -> str:
    """The work unit a test belongs to: its file, or its end-to-end stack group."""
    path = nodeid.split("::", 1)[0]
    if not path.startswith(f"{E2E}/") or path in E2E_OWN_STACKS:
        return path
    return f"{E2E} (stack {1 if path in E2E_FIRST_STACK else 2})"


def _start_rank(scope: str) -> int:
    """Which work starts first on the workers: the longest (the end-to-end stack groups),
    then the single long files, the stacks of their own, the integration files, and
    last the unit files, which fill the gaps at the end."""
    if scope.startswith(f"{E2E} (stack"):
        return 0
    if scope in LONG_FILES:
        return 1
    if scope in E2E_OWN_STACKS:
        return 2
    return 4 if scope.startswith("tests/unit/") else 3


class _StartOrder(OrderedDict[str, Any]):
    """Work units kept in :func:`_start_rank` order (by test count within a rank, as
    xdist inserts them)."""

    def __setitem__(self, scope: str, tests: Any) -> None:
        super().__setitem__(scope, tests)
        for later in [other for other in self if _start_rank(other) > _start_rank(scope)]:
            self.move_to_end(later)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` runs test files on parallel workers (pytest-xdist): a file's tests on
    one worker, so that its module fixtures start once, and each group of end-to-end
    files on one worker, so that each group starts one shared `tavla dev` stack
    (`dev_stack`).

    Each worker is a session of its own: its own PostgreSQL, brokers and temp dirs,
    on free ports (the same isolation that lets two checkouts run their suites at once).
    """
    if config.getoption("dist") not in ("load", "loadscope", "loadfile"):
        return None  # an explicit other mode (--dist each, worksteal...) is xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):  # type: ignore[misc]
        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.workqueue = _StartOrder()

        def _split_scope(self, nodeid: str) -> str:
            return _work_unit(nodeid)

    return ByWorkUnit(config, log)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session-wide directory for component data and logs."""
    return tmp_path_factory.mktemp("run")


@pytest.fixture(scope="session")
def session_supervisor(run_dir: Path) -> Iterator[Supervisor]:
    """Owns the session's component processes; stops all of them at the end."""
    with Supervisor(run_dir / "logs") as owner:
        yield owner


@pytest.fixture(scope="session")
def postgres_server(run_dir: Path, session_supervisor: Supervisor) -> Iterator[PostgresServer]:
    """PostgreSQL on 127.0.0.1: `url(db)`, `dsn(db)`, `create_database(name)`, stop/start."""
    server = PostgresServer(run_dir / "postgres", free_port(), session_supervisor)
    server.start()
    yield server
    server.remove_data()


@pytest.fixture(scope="module")
def kafka_broker(session_supervisor: Supervisor) -> Iterator[KafkaBroker]:
    """This module's Tansu on 127.0.0.1 with the platform's topics: `bootstrap`,
    stop/start/restart."""
    broker = KafkaBroker(free_port(), session_supervisor)
    broker.start()
    broker.create_topics_from_file()
    yield broker
    # SIGKILL: it keeps everything in memory, so there is nothing to flush, and on SIGTERM
    # it first answers a JoinGroup still pending (a consumer stopped mid-join): up to 5 s.
    if broker.process is not None:
        broker.process.stop_signal = signal.SIGKILL
    broker.stop()
