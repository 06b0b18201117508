"""`tavla dev` itself end to end: the whole platform comes up and goes away, whether
stopped with Ctrl-C or SIGTERM, killed, failing at start or losing a service, on
external servers or its own.

Each test starts its own stack (`dev_run`) with its own run dir and ports laid out from
a block reserved for it (`TAVLA_DEV_PORT_BASE`), so it cannot disturb a developer's
`make run`, and stops, kills or misconfigures it. These tests share nothing with the
session's `dev_stack`, so `make test` runs this file as a work unit of its own
(tests/conftest.py), on whichever worker is free. What the platform does behind the
gateway is checked on the shared stack (test_dev_stack.py and the other files).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from services.kit import ports
from services.kit.devstack.broker import KafkaBroker
from services.kit.devstack.postgres import PostgresServer
from tests.e2e.devstack import (
    STARTUP_TIMEOUT,
    DevRun,
    processes_mentioning,
    start_dev,
    start_dev_healthy,
)


def listening(candidates: list[int]) -> list[int]:
    """Which of these ports something still listens on (client sockets of other tests,
    which may borrow them as ephemeral ports, do not count)."""
    wanted = set(candidates)
    return sorted({
        conn.laddr.port for conn in psutil.net_connections(kind="tcp")
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port in wanted
    })


def still_running(procs: list[psutil.Process]) -> list[str]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{proc.pid} {' '.join(proc.cmdline())}")
        except psutil.NoSuchProcess:
            pass
    return alive


def test_dev_brings_the_platform_up_and_ctrl_c_leaves_nothing_behind(
    tmp_path: Path, dev_run: list[DevRun]
) -> None:
    # Its own stack: it stops it. What the platform does behind the gateway is checked
    # on the shared stack (test_dev_stack.py); SIGTERM (one handler serves both signals,
    # dev._install_signal_handlers) by the external-servers test below, which sends it.
    run = start_dev_healthy(tmp_path, dev_run)

    started = run.descendants()
    names = " ".join(" ".join(p.cmdline()) for p in started)
    assert "postgres" in names and "tansu" in names and "envoy" in names
    for service in ports.SERVICES:
        assert f"serve {service}" in names
    assert len(started) >= 3 + len(ports.SERVICES)
    table = run.text()
    for component in ("postgres", "broker", "gateway", *ports.SERVICES):
        assert component in table
    assert str(run.port(ports.GATEWAY_PORT)) in table

    # Behind the gateway, reads need a token: the JWT filter answers before any service.
    assert httpx.get(run.gateway + "/v1/accounts/someone", timeout=5).status_code == 401

    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(60) == 0, run.text()

    assert still_running(started) == []
    assert still_running(processes_mentioning(run.run_dir)) == []
    assert listening(run.all_ports()) == []
    assert "stopped" in run.text()


def test_service_failing_at_start_stops_everything_and_shows_its_log(
    tmp_path: Path, dev_run: list[DevRun]
) -> None:
    # Every service rejects this value at start (the kit validates TAVLA_* variables).
    run = start_dev(tmp_path, dev_run, TAVLA_SHUTDOWN_GRACE_SECONDS="soon")
    try:
        code = run.process.wait(STARTUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"tavla dev did not give up:\n{run.text()}")

    assert code != 0
    assert "TAVLA_SHUTDOWN_GRACE_SECONDS" in run.text()  # the tail of the failing service's log
    assert still_running(processes_mentioning(run.run_dir)) == []
    assert listening(run.all_ports()) == []


def test_dev_uses_external_servers_and_leaves_them_running(
    tmp_path: Path,
    dev_run: list[DevRun],
    postgres_server: PostgresServer,
    kafka_broker: KafkaBroker,
) -> None:
    run = start_dev_healthy(
        tmp_path,
        dev_run,
        TAVLA_DATABASE_URL=postgres_server.url("postgres"),
        TAVLA_KAFKA_BOOTSTRAP=kafka_broker.bootstrap,
    )
    # Its own stack: it stops it, with SIGTERM (as a supervisor or `kill` would).
    started = run.descendants()
    names = " ".join(" ".join(p.cmdline()) for p in started)
    assert "tansu" not in names and "pginstall" not in names  # nothing of its own
    databases = postgres_server.psql("SELECT datname FROM pg_database").split()
    assert {f"tavla_{service}" for service in ports.SERVICES} <= set(databases)

    run.process.send_signal(signal.SIGTERM)
    assert run.process.wait(60) == 0, run.text()
    # Everything it started is gone...
    assert still_running(started) == []
    assert still_running(processes_mentioning(run.run_dir)) == []
    assert listening(run.all_ports()) == []
    assert "stopped" in run.text()
    # ...and the servers it did not start keep running.
    assert postgres_server.accepting_connections()
    assert kafka_broker.running()


def test_service_dying_while_running_stops_everything_with_an_error(
    tmp_path: Path, dev_run: list[DevRun]
) -> None:
    run = start_dev_healthy(tmp_path, dev_run)
    started = run.descendants()
    victim = next(p for p in started if "serve game" in " ".join(p.cmdline()))

    victim.kill()

    assert run.process.wait(60) == 1, run.text()
    assert "game" in run.text().split("error:", 1)[1]
    assert still_running(started) == []


def test_stop_while_starting_leaves_nothing_behind(
    tmp_path: Path, dev_run: list[DevRun]
) -> None:
    run = start_dev(tmp_path, dev_run)
    deadline = time.monotonic() + 60
    # Interrupt once the services are being started, before the gateway is healthy.
    while "accounts: started" not in run.text():
        assert time.monotonic() < deadline and run.process.poll() is None, run.text()
        time.sleep(0.05)
    started = run.descendants()

    run.process.send_signal(signal.SIGTERM)

    assert run.process.wait(60) == 0, run.text()
    assert "ready;" not in run.text()
    assert still_running(started) == []
    assert still_running(processes_mentioning(run.run_dir)) == []
    assert listening(run.all_ports()) == []


def test_even_a_killed_dev_leaves_nothing_behind(
    tmp_path: Path, dev_run: list[DevRun]
) -> None:
    run = start_dev_healthy(tmp_path, dev_run)
    started = run.descendants()

    run.process.kill()  # no handler, no finally: only the parent-death signal acts
    run.process.wait(10)

    deadline = time.monotonic() + 15
    while still_running(started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert still_running(started) == []
