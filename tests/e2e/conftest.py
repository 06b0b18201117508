"""End-to-end fixtures: one shared `tavla dev` stack for the session, and private ones.

Starting `tavla dev` costs 13-20 s on two busy cores; most end-to-end tests only
need *a* running stack, so they share `dev_stack`. Tests of `tavla dev` itself
(stopping it, killing it, a failing service, external servers) or needing a
setting the shared stack does not have start their own with `dev_run`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.devstack import DevRun, kill_run, start_dev_healthy

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
    # still answer PENDING first, and a dozen of them no longer cost half a minute.
    "TAVLA_WALLET_SANDBOX_DELAY_SECONDS": "0.5",
    "TAVLA_WALLET_SANDBOX_POLL_SECONDS": "0.1",
}


@pytest.fixture(scope="session")
def dev_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    """The session's shared `tavla dev` stack (a `DevRun`), started on first use.

    What it is: the real platform as `make run` starts it (PostgreSQL, the broker,
    every service as its own `tavla serve`, Envoy, geo on its dev databases), on
    ports shifted by a free offset (`dev_stack.offset`), with `DEV_STACK_SETTINGS`.
    Use `dev_stack.gateway` (base URL), `.broker` (`host:port`), `.grpc_address(s)`,
    `.service_token(caller, target)`, `.run_dir` (keys, logs), `.postgres_port`.

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
    It is killed at the end of the session.
    """
    runs: list[DevRun] = []
    try:
        yield start_dev_healthy(tmp_path_factory.mktemp("dev-stack"), runs, **DEV_STACK_SETTINGS)
    finally:
        for run in runs:
            kill_run(run)


@pytest.fixture
def dev_run() -> Iterator[list[DevRun]]:
    """Private `tavla dev` runs of one test (`start_dev(tmp_path, dev_run, ...)`); whatever
    a failing test left running is killed afterwards."""
    runs: list[DevRun] = []
    yield runs
    for run in runs:
        kill_run(run)
