"""Running `tavla dev` from the end-to-end tests, and signing players up through its gateway.

`tavla dev` runs as a subprocess with its own run dir and its ports laid out from the
base of a block of ports reserved for it (`TAVLA_DEV_PORT_BASE`), below the kernel's
ephemeral range, so it cannot disturb a developer's `make run` and no other process's
connection can take one of its ports. Most tests share one
stack (the session fixture `dev_stack` in conftest.py); the tests of `tavla dev`
itself start their own (`start_dev`, `start_dev_healthy`, registered in the
`dev_run` fixture for cleanup).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import httpx
import psutil
import pytest

from services.kit import ports
from services.kit.devstack.keys import ServiceKeys, load_private_key
from services.kit.devstack.net import PortRange, reserve_ports
from services.kit.devstack.postgres import discard
from services.kit.service_tokens import SERVICE_TOKEN_HEADER, ServiceTokenMinter

REPO = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 120.0


def stack_ports(patience: float = 60.0) -> PortRange:
    """Ports for one stack, this process's alone until released (`kill_run` does). The
    blocks are shared by every test process of the machine's user (67 of them here): should
    all be held, one comes free as another process's stack or module ends."""
    return reserve_ports(len(ports.DEV_PORTS), patience)


@dataclass
class DevRun:
    """One `tavla dev` process: where its gateway, services and broker are, its output."""

    process: subprocess.Popen[bytes]
    output: Path
    run_dir: Path
    block: PortRange  # its ports: `TAVLA_DEV_PORT_BASE` is `block.first`

    def port(self, default: int) -> int:
        """Where the component that `make run` puts on ``default`` listens in this stack."""
        return self.block.first + ports.DEV_PORTS.index(default)

    def all_ports(self) -> list[int]:
        return [self.port(default) for default in ports.DEV_PORTS]

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.port(ports.GATEWAY_PORT)}"

    @property
    def broker(self) -> str:
        """The stack's Kafka-protocol broker, `host:port`."""
        return f"127.0.0.1:{self.port(ports.DEV_KAFKA_PORT)}"

    @property
    def postgres_port(self) -> int:
        return self.port(ports.DEV_POSTGRES_PORT)

    def grpc_address(self, service: str) -> str:
        return f"127.0.0.1:{self.port(ports.SERVICES[service].grpc)}"

    @property
    def service_keys(self) -> ServiceKeys:
        """The run's own service keys (``tavla dev`` makes them): what its services trust."""
        return ServiceKeys(self.run_dir / "service-keys")

    def service_token(self, caller: str, target: str) -> list[tuple[str, str]]:
        """Metadata with a service token signed by ``caller``'s key from the run dir."""
        key = load_private_key(self.service_keys.private_key_file(caller))
        return [(SERVICE_TOKEN_HEADER, ServiceTokenMinter(caller, key).token(target))]

    def text(self) -> str:
        return self.output.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        return psutil.Process(self.process.pid).children(recursive=True)

    def wait_healthy(self) -> float | None:
        """Seconds until /healthz 200, or None if it exited because a port was taken."""
        started = time.monotonic()
        with httpx.Client(timeout=2) as client:
            while time.monotonic() - started < STARTUP_TIMEOUT:
                if self.process.poll() is not None:
                    if "already in use" in self.text():
                        return None
                    pytest.fail(f"tavla dev exited with {self.process.returncode}:\n{self.text()}")
                try:
                    if client.get(self.gateway + "/healthz").status_code == 200:
                        return time.monotonic() - started
                except httpx.TransportError:
                    pass
                time.sleep(0.2)
        pytest.fail(f"/healthz not 200 after {STARTUP_TIMEOUT:.0f}s:\n{self.text()}")


def start_dev(tmp_path: Path, runs: list[DevRun], **extra_env: str) -> DevRun:
    """Start `tavla dev` (registered in `runs` for cleanup) past its port check.

    Its ports are a reserved block's, below the ephemeral range: only a process outside
    the suite binding one of them on purpose could take one before `tavla dev` checks
    it; then it tries again on another block.
    """
    for attempt in range(5):
        run = _launch(tmp_path / f"attempt{attempt}", extra_env)
        runs.append(run)
        # The port check is the first thing it does; the first progress line means passed.
        while "[tavla dev] postgres:" not in run.text() and run.process.poll() is None:
            time.sleep(0.02)
        if run.process.poll() is None or "ports already in use" not in run.text():
            return run
    pytest.fail(f"no free set of ports after 5 attempts:\n{run.text()}")


def start_dev_healthy(tmp_path: Path, runs: list[DevRun], **extra_env: str) -> DevRun:
    """Start `tavla dev` and wait for /healthz 200, retrying if a port was snatched
    between its check and a service binding it."""
    for attempt in range(5):
        run = start_dev(tmp_path / f"healthy{attempt}", runs, **extra_env)
        took = run.wait_healthy()
        if took is not None:
            print(f"tavla dev: /healthz 200 after {took:.1f}s")
            return run
    pytest.fail(f"tavla dev never got its ports:\n{run.text()}")


def _launch(directory: Path, extra_env: dict[str, str]) -> DevRun:
    directory.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TAVLA_DATABASE_URL", "TAVLA_KAFKA_BOOTSTRAP", "TAVLA_DEV_PORT_OFFSET")}
    block = stack_ports()
    env.update(TAVLA_DEV_DIR=str(directory / "run"), TAVLA_DEV_PORT_BASE=str(block.first),
               TAVLA_LOG_LEVEL="info", **extra_env)
    output = directory / "tavla-dev.out"
    with output.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.cli", "dev"], cwd=REPO, env=env,
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return DevRun(process, output, directory / "run", block)


def kill_run(run: DevRun) -> None:
    """SIGKILL `tavla dev` and anything it left running (nothing graceful: test cleanup)."""
    try:
        leftovers = run.descendants() if run.process.poll() is None else []
        run.process.kill()
        run.process.wait(10)
        for proc in leftovers + processes_mentioning(run.run_dir):
            proc.kill()
    finally:
        run.block.release()
    data = run.run_dir / "postgres"
    if data.is_symlink():  # relocated out of the private temp dir: remove it too
        remove_in_background(data)


def remove_in_background(link: Path) -> None:
    """Delete the relocated data directory `link` points to: its symlink and `.origin`
    note at once, the files by a detached `rm` (`discard`): about 3,800 files took 8 to
    13 s to delete on the shared machine, nearly all of it the disk's (ext4 with online
    discard), which no test needs to wait for."""
    real = link.resolve()
    link.unlink()
    real.with_suffix(".origin").unlink(missing_ok=True)
    discard(real)


def processes_mentioning(path: Path) -> list[psutil.Process]:
    """Processes whose command line names `path` (postgres -D, envoy -c, ...)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or ())
        if str(path) in cmdline and proc.pid != os.getpid():
            found.append(proc)
    return found


class SignedUp(NamedTuple):
    account_id: str
    email: str
    bearer: dict[str, str]  # the Authorization header with its access token


# The gateway allows 5 registrations and 10 logins a minute per client address, as in
# production: each sign-up comes from a loopback address of its own, as different
# players would. 127.0.0.1 itself is left to the contract test's fuzzer, which spends
# its budget.
_OWN_ADDRESSES = itertools.count(10)


def own_address() -> str:
    """A loopback address no other sign-up of this session used (for 240 of them)."""
    return f"127.0.0.{next(_OWN_ADDRESSES) % 240 + 10}"


def client_from_own_address(base_url: str | httpx.URL) -> httpx.Client:
    """A client whose calls leave from an address of their own (see `own_address`)."""
    transport = httpx.HTTPTransport(local_address=own_address())
    return httpx.Client(base_url=base_url, timeout=10, transport=transport)


def sign_up_from_a_new_address(client: httpx.Client, body: dict[str, str]) -> httpx.Response:
    with client_from_own_address(client.base_url) as player:
        return player.post("/v1/accounts", json=body)


def signed_up(client: httpx.Client, name: str) -> SignedUp:
    """A new account through the gateway, logged in."""
    name = f"{name}{uuid.uuid4().hex[:6]}"  # display names are unique
    email = f"{name}@example.com"
    with client_from_own_address(client.base_url) as player:
        created = player.post("/v1/accounts", json={
            "email": email, "password": "correct horse battery",
            "display_name": name, "residence": "MT", "dateOfBirth": "1990-04-21",
        })
        assert created.status_code == 200, created.text
        login = player.post(
            "/v1/sessions", json={"email": email, "password": "correct horse battery"}
        )
        assert login.status_code == 200, login.text
    bearer = {"authorization": f"Bearer {login.json()['accessToken']}"}
    return SignedUp(created.json()["accountId"], email, bearer)
