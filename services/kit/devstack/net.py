"""Free loopback ports for components started on this machine (dev stack, tests, benchmarks).

A port the kernel picks (a bind to port 0) lies in its ephemeral range, the range it also
takes client ports from: between the check and the component's own bind, any process's
outgoing connection (a PostgreSQL or broker client of another test) could take it, and the
component failed with "already in use". So the ports handed out here come from below the
ephemeral range, where the kernel never assigns client ports, and above every port
`tavla dev` uses at its largest offset (services/kit/ports.py).

Two processes must not hand out the same port either: each reserves a block of its own by
holding a lock on the block's file (``flock``, which the kernel releases when the process
ends, even by SIGKILL), and hands out the block's ports in turn, skipping any that something
is bound to. Where no block can be had (all taken, or no lock directory), the kernel's pick
is the fallback.

A caller that needs ports together (a `tavla dev` of the tests) reserves a whole block the
same way (``reserve_ports``) and gives it back when done.

Nor may one process hand out a port twice before its taker has bound it: a port is not
handed out again for ``HANDED_SECONDS``. When every port of the process's blocks is bound
or recently handed out, it reserves another block. Without that, a block whose other ports
were all bound or in TIME_WAIT handed its one free port to every caller, and a block whose
turn came round handed out again a port given a moment before (or one a test keeps as an
address nothing listens on). Two servers of one test process could then bind one port
together (gRPC sets ``SO_REUSEPORT``, which lets them) and a client's connections went to
either.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

# Above `tavla dev`'s broker at its largest offset (19092 + 5000).
FIRST_PORT = 24100
BLOCK_SIZE = 128
HANDED_SECONDS = 60.0  # a caller binds its port "soon after"; this is long after
_LINUX_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def free_port() -> int:
    """A port nothing listens on right now, reserved for this process (the caller binds it
    soon after)."""
    return _RESERVATION.port() or _kernel_pick()


@dataclass
class _Block:
    first: int
    size: int
    lock_file: int  # kept open: closing it would release the reservation
    cursor: int = 0
    handed: dict[int, float] = field(default_factory=dict)  # port -> when it was handed out

    def next_free(self, now: float) -> int | None:
        for _ in range(self.size):
            port = self.first + self.cursor
            self.cursor = (self.cursor + 1) % self.size
            if now - self.handed.get(port, -HANDED_SECONDS) < HANDED_SECONDS:
                continue  # its taker may not have bound it yet
            if _bindable(port):
                self.handed[port] = now
                return port
        return None


class _Reservation:
    """This process's blocks; one more when they have nothing free, new ones in a forked
    child (whose parent keeps its own)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self._blocks: list[_Block] = []

    def port(self) -> int | None:
        with self._lock:
            if self._owner != os.getpid():
                self._owner, self._blocks = os.getpid(), []
            now = time.monotonic()
            for block in self._blocks:
                port = block.next_free(now)
                if port is not None:
                    return port
            reserved = _reserve_block()
            if reserved is None:
                return None
            self._blocks.append(reserved)
            return reserved.next_free(now)


_RESERVATION = _Reservation()


@dataclass
class PortRange:
    """``count`` consecutive ports from ``first``, free when reserved and this process's
    alone (a whole block's lock held) until ``release()``: for a component that wants its
    ports together, such as a `tavla dev` laid out from ``TAVLA_DEV_PORT_BASE``."""

    first: int
    count: int
    _block: _Block

    def release(self) -> None:
        if self._block.lock_file >= 0:
            os.close(self._block.lock_file)
            self._block.lock_file = -1


def reserve_ports(count: int, patience: float = 0.0) -> PortRange:
    """A block below the ephemeral range whose first ``count`` ports are free now; raises
    ``RuntimeError`` when every block is locked or busy for ``patience`` seconds (the blocks
    are shared by every process of the machine's user: one comes free when another's stack
    or test module ends)."""
    if count > BLOCK_SIZE:
        raise ValueError(f"at most {BLOCK_SIZE} ports together")
    deadline = time.monotonic() + patience
    while True:
        try:
            return _reserve_ports(count)
        except RuntimeError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)


def _reserve_ports(count: int) -> PortRange:
    passed: list[_Block] = []  # kept locked while looking, so no block is tried twice
    try:
        while (block := _reserve_block()) is not None:
            if all(_bindable(port) for port in range(block.first, block.first + count)):
                return PortRange(block.first, count, block)
            passed.append(block)
    finally:
        for other in passed:
            os.close(other.lock_file)
    raise RuntimeError(f"no block of {count} free ports between {FIRST_PORT} and "
                       f"{ephemeral_range_start()}")


def _block_starts() -> list[int]:
    """The first port of every block between ``FIRST_PORT`` and the ephemeral range."""
    return list(range(FIRST_PORT, ephemeral_range_start() - BLOCK_SIZE + 1, BLOCK_SIZE))


def ephemeral_range_start() -> int:
    """Where the kernel's client ports begin (Linux's setting; 32768 where it cannot be read,
    which is Linux's default and below other systems' 49152)."""
    try:
        return int(_LINUX_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _reserve_block() -> _Block | None:
    directory = Path(tempfile.gettempdir()) / f"tavla-ports-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    starts = _block_starts()
    random.shuffle(starts)  # processes starting together rarely try the same block first
    for start in starts:
        try:
            descriptor = os.open(directory / f"{start}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            return None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            continue
        return _Block(first=start, size=BLOCK_SIZE, lock_file=descriptor)
    return None


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_pick() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
