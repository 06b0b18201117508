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

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.kit.devstack.broker import KafkaBroker
from services.kit.devstack.net import free_port
from services.kit.devstack.postgres import PostgresServer
from services.kit.devstack.supervisor import Supervisor


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
    broker.stop()
