"""Start named child processes and make sure none of them outlives its owner.

Every child runs in its own session (hence its own process group), so a Ctrl-C
in the terminal reaches only the owner, which then stops the children in reverse
start order: the stop signal to the leader, SIGKILL to the whole group after a
deadline. An ``atexit`` hook and, on Linux, a parent-death signal cover the
paths where the owner never reaches its ``finally``. The kernel ties that
signal to the *thread* that started the child, so call ``start`` from a thread
that lives as long as the child should (the main thread, in practice).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from services.kit.orphans import die_with_parent


class ProcessFailed(RuntimeError):
    """A child exited, or never became ready; the message carries its log tail."""


class StopRequested(BaseException):
    """The owner was asked to stop (Ctrl-C, SIGTERM); a BaseException so no
    `except Exception` swallows it."""


# Signal handlers only set this flag; waits check it. Raising straight from a handler
# is unsafe: it can land inside fork bookkeeping (at-fork hooks), where it is ignored.
_stop_requested = threading.Event()


def request_stop() -> None:
    """Ask every wait in this process to give up (safe to call from a signal handler)."""
    _stop_requested.set()


def raise_if_stop_requested() -> None:
    if _stop_requested.is_set():
        raise StopRequested




def tail(path: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log file ('' if it does not exist)."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@dataclass
class ManagedProcess:
    """One started child: its name, process handle, log file and how to stop it."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    stop_signal: int = signal.SIGTERM
    # Neighbours in start order with the same tier stop together (peers, not dependents).
    tier: str | None = None
    started_at: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def running(self) -> bool:
        return self.popen.poll() is None

    def returncode(self) -> int | None:
        return self.popen.poll()

    def log_tail(self, lines: int = 40) -> str:
        return tail(self.log_path, lines)

    def failure(self, reason: str) -> ProcessFailed:
        return ProcessFailed(
            f"{self.name} (pid {self.pid}) {reason}; last lines of {self.log_path}:\n"
            f"{self.log_tail()}"
        )

    def wait_ready(
        self, check: Callable[[], bool], timeout: float, interval: float = 0.1
    ) -> float:
        """Poll `check` until it is true; returns the seconds since start.

        Raises ProcessFailed if the process exits first or the timeout passes.
        """
        deadline = time.monotonic() + timeout
        while True:
            raise_if_stop_requested()
            if not self.running():
                raise self.failure(f"exited with status {self.returncode()} while starting")
            if check():
                return time.monotonic() - self.started_at
            if time.monotonic() > deadline:
                raise self.failure(f"was not ready after {timeout:.0f}s")
            time.sleep(interval)

    def stop(self, timeout: float) -> None:
        """Stop signal to the leader, SIGKILL to the group after `timeout` seconds."""
        self.send_stop()
        self.finish_stop(time.monotonic() + timeout)

    def send_stop(self) -> None:
        if self.running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, self.stop_signal)

    def finish_stop(self, deadline: float) -> None:
        """Wait for the leader until `deadline`, then SIGKILL; then clear its group."""
        try:
            self.popen.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill_group(self.pid)
            self.popen.wait(5)
        # The leader is gone; anything it left in its group (workers, backends) goes too.
        _kill_group(self.pid)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class Supervisor:
    """Starts children with logs under `log_dir`; stops all of them in reverse order."""

    def __init__(self, log_dir: Path, stop_timeout: float = 10.0) -> None:
        self.log_dir = log_dir
        self.stop_timeout = stop_timeout
        self._procs: list[ManagedProcess] = []
        # A weak reference: the hook must not keep a forgotten supervisor alive.
        ref = weakref.ref(self)

        def _stop_at_exit() -> None:
            sup = ref()
            if sup is not None:
                sup.stop_all()

        self._atexit = _stop_at_exit
        atexit.register(self._atexit)

    @property
    def processes(self) -> list[ManagedProcess]:
        return list(self._procs)

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        user: str | None = None,
        stop_signal: int = signal.SIGTERM,
        tier: str | None = None,
    ) -> ManagedProcess:
        """Start `argv` as `name`, output appended to `<log_dir>/<name>.log`.

        Children started one after another with the same `tier` are peers: stop_all
        signals them together instead of one by one.
        """
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{name}.log"
        with log_path.open("ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} {' '.join(argv)}\n".encode())
            log.flush()
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                user=user,
                start_new_session=True,
                preexec_fn=die_with_parent,  # only calls prctl: safe enough with threads
            )
        proc = ManagedProcess(name, popen, log_path, stop_signal, tier=tier)
        self._procs.append(proc)
        return proc

    def get(self, name: str) -> ManagedProcess:
        for proc in reversed(self._procs):
            if proc.name == name:
                return proc
        raise KeyError(name)

    def stop(self, name: str) -> None:
        """Stop one child and forget it (it may be started again under the same name)."""
        proc = self.get(name)
        proc.stop(self.stop_timeout)
        self._procs.remove(proc)

    def stop_all(self) -> None:
        """Stop every child, last started first (peers of a tier together); idempotent."""
        while self._procs:
            batch = [self._procs.pop()]
            while batch[0].tier is not None and self._procs and (
                self._procs[-1].tier == batch[0].tier
            ):
                batch.append(self._procs.pop())
            for proc in batch:
                proc.send_stop()
            deadline = time.monotonic() + self.stop_timeout
            for proc in batch:
                try:
                    proc.finish_stop(deadline)
                except Exception:  # one failure must not leave the others running
                    _kill_group(proc.pid)

    def first_exited(self) -> ManagedProcess | None:
        """The first child that is no longer running, if any."""
        return next((p for p in self._procs if not p.running()), None)

    def close(self) -> None:
        self.stop_all()
        atexit.unregister(self._atexit)

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
