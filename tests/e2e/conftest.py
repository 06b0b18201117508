"""End-to-end fixtures: a shared `tavla dev` stack per worker, and private ones.

Starting `tavla dev` costs 13-20 s on two busy cores; most end-to-end tests only
need *a* running stack, so they share `dev_stack`. Tests of `tavla dev` itself
(stopping it, killing it, a failing service, external servers) or needing a
setting the shared stack does not have start their own with `dev_run`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.devstack import DevRun, kill_run, start_dev_healthy

E2E = "tests/e2e"

# The shared stack's settings, for everything its tests need at once:
DEV_STACK_SETTINGS = {
    # The tests play the one proxy in front of the gateway and say where their
    # players are (X-Forwarded-For: services/geo/devdata.py's MALTA_IP, FLORIDA_IP,
    # malta_address(n)); a call without the header comes from its loopback address,
    # which geo places nowhere (real money refused).
    "TAVLA_DEV_XFF_TRUSTED_HOPS": "1",
    # Queue waves every half second (an entry wakes one sooner anyway).
    "TAVLA_MATCHMAKING_WAVE_SECONDS": "0.5",
    # A player silent (no command, heartbeat or open watch) for 5 s is disconnected and
    # has 10 s to come back before the game is settled by analysis: an abandoned game
    # settles within seconds, while players who act now and then are never caught.
    "TAVLA_GAME_PRESENCE_SILENCE_SECONDS": "5",
    "TAVLA_GAME_PRESENCE_SWEEP_SECONDS": "0.2",
    "TAVLA_GAME_RECONNECT_SECONDS_UNSAFE": "10",
    "TAVLA_GAME_TIMER_SECONDS": "0.2",
    # The sandbox provider confirms a deposit after half a second, not two: deposits
    # still answer PENDING first, and a dozen of them no longer cost half a minute. (Its
    # callback goes out when the delay has passed, not at its next poll.)
    "TAVLA_WALLET_SANDBOX_DELAY_SECONDS": "0.5",
    # Argon2 at one pass over 8 MiB (under 0.01 s of CPU) instead of three over 64 MiB
    # (0.2 s) for the players the tests register and log in: the same argon2id code path.
    "TAVLA_ACCOUNTS_CHEAP_PASSWORD_HASHES_UNSAFE": "true",
    "TAVLA_NOT_PRODUCTION": "true",
}


class _SharedStack:
    """The worker's shared `tavla dev`: started on first use, killed once the worker's next
    test is no end-to-end test (an idle stack's services keep polling: about a fifth of a
    core, for the rest of the run), started again should an end-to-end test come later.
    A stack that failed to start fails every test that asks for it, without starting it
    again (as a session fixture's error would)."""

    def __init__(self) -> None:
        self.runs: list[DevRun] = []
        self.current: DevRun | None = None
        self.failure: BaseException | None = None  # pytest.fail's is a BaseException

    def get(self, tmp_path_factory: pytest.TempPathFactory) -> DevRun:
        if self.failure is not None:
            raise self.failure
        if self.current is None:
            try:
                self.current = start_dev_healthy(
                    tmp_path_factory.mktemp("dev-stack"), self.runs, **DEV_STACK_SETTINGS
                )
            except (Exception, pytest.fail.Exception) as failed:
                self.failure = failed
                raise
        return self.current

    def stop(self) -> None:
        for run in self.runs:
            kill_run(run)
        self.runs.clear()
        self.current = None


_SHARED_STACK = _SharedStack()


@pytest.fixture(scope="session")
def _shared_stack() -> Iterator[_SharedStack]:
    """Kills the shared stack at the end of the session, whatever happened before."""
    try:
        yield _SHARED_STACK
    finally:
        _SHARED_STACK.stop()


@pytest.fixture
def dev_stack(_shared_stack: _SharedStack, tmp_path_factory: pytest.TempPathFactory) -> DevRun:
    """The shared `tavla dev` stack of this worker (a `DevRun`), started on first use.

    What it is: the real platform as `make run` starts it (PostgreSQL, the broker,
    every service as its own `tavla serve`, Envoy, geo on its dev databases), on
    ports laid out from a reserved block's base (`dev_stack.block.first`), with
    `DEV_STACK_SETTINGS`. Use `dev_stack.gateway` (base URL), `.broker` (`host:port`),
    `.grpc_address(s)`, `.port(default)`, `.service_token(caller, target)`, `.run_dir`
    (keys, logs), `.postgres_port`.

    Rules for sharing it (every test must pass alone and in any order):
    - Make fresh accounts per test (`devstack.signed_up`, unique names and emails);
      never rely on counts or ranks of the whole platform (other tests' players,
      games and ratings are there too).
    - Registration, login and refresh are rate limited per client address (5, 10, 30
      a minute): call them from an address of your own: `devstack.own_address()` /
      `client_from_own_address()`, or `X-Forwarded-For` (this stack believes one
      hop; a browser can send it as an extra header). 127.0.0.1 is spent by the
      contract test's fuzzer.
    - Leave the queue when a test is done with a ticket still waiting, so that no
      later test is paired with it.
    - Never stop, restart or reconfigure it: a test that needs that starts its own
      with the `dev_run` fixture.
    Under `make test` each of the two end-to-end groups runs on a worker of its own
    with a stack of its own (tests/conftest.py). The stack is killed when the
    worker's next test is not an end-to-end test, and at the end of the session.
    """
    return _shared_stack.get(tmp_path_factory)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the worker's last end-to-end test in a row, the shared stack goes."""
    if nextitem is None or not nextitem.nodeid.startswith(f"{E2E}/"):
        _SHARED_STACK.stop()


@pytest.fixture
def dev_run() -> Iterator[list[DevRun]]:
    """Private `tavla dev` runs of one test (`start_dev(tmp_path, dev_run, ...)`); whatever
    a failing test left running is killed afterwards."""
    runs: list[DevRun] = []
    yield runs
    for run in runs:
        kill_run(run)
