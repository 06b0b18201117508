"""Free ports for local components: outside the kernel's client ports, never one port for
two processes, never a port something is bound to."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from services.kit.devstack.net import BLOCK_SIZE, FIRST_PORT, ephemeral_range_start, free_port
from services.kit.ports import DEV_KAFKA_PORT, DEV_POSTGRES_PORT, SERVICES

HAND_OUT = "from services.kit.devstack.net import free_port\n" \
    "print(' '.join(str(free_port()) for _ in range({count})), flush=True)\n"


def block_of(port: int) -> int:
    return (port - FIRST_PORT) // BLOCK_SIZE


def test_ports_lie_between_the_dev_stack_and_the_kernels_client_ports() -> None:
    ports = [free_port() for _ in range(20)]
    largest_dev_offset = 5000
    dev_ports = [DEV_KAFKA_PORT, *(p.metrics for p in SERVICES.values())]
    assert max(dev_ports) + largest_dev_offset < FIRST_PORT
    assert all(FIRST_PORT <= port < ephemeral_range_start() for port in ports)
    assert max(ports) < min(DEV_POSTGRES_PORT, *(p.grpc for p in SERVICES.values()))
    assert len(set(ports)) == 20


def test_two_processes_never_hand_out_the_same_port() -> None:
    # Each holds its block until told to go (stdin closed): a block is free again once its
    # process has ended, which is no collision.
    script = HAND_OUT.format(count=3 * BLOCK_SIZE) + "import sys; sys.stdin.read()\n"
    runs = [subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True) for _ in range(3)]
    try:
        handed = []
        for run in runs:
            assert run.stdout is not None
            handed.append(set(map(int, run.stdout.readline().split())))
    finally:
        for run in runs:
            run.communicate(timeout=60)
    # A process never hands out a port twice (three blocks' worth: three blocks of its own).
    assert all(len(ports) == 3 * BLOCK_SIZE for ports in handed)
    assert not (handed[0] & handed[1]) and not (handed[0] & handed[2])
    assert not (handed[1] & handed[2])


def test_a_port_is_not_handed_out_again_before_its_taker_could_bind_it() -> None:
    # Nothing binds these: a block's worth and more, in one process, all different (the
    # block's turn came round to its first ports again, handed out a moment before).
    ports = [free_port() for _ in range(BLOCK_SIZE + 8)]
    assert len(set(ports)) == len(ports)


def test_a_port_something_is_bound_to_is_skipped() -> None:
    taken = free_port()
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", taken))
        listener.listen()
        again = [free_port() for _ in range(2 * BLOCK_SIZE)]
    assert taken not in again


def _child_port(queue: multiprocessing.Queue[int]) -> None:
    queue.put(free_port())


def test_a_forked_child_reserves_a_block_of_its_own() -> None:
    mine = free_port()
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[int] = context.Queue()
    child = context.Process(target=_child_port, args=(queue,))
    child.start()
    theirs = queue.get(timeout=30)
    child.join(timeout=30)
    assert block_of(theirs) != block_of(mine)


def test_a_killed_process_gives_its_block_back() -> None:
    script = HAND_OUT.format(count=1) + "import time; time.sleep(60)\n"
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    port = int(holder.stdout.readline())
    start = FIRST_PORT + block_of(port) * BLOCK_SIZE
    lock = Path(tempfile.gettempdir()) / f"tavla-ports-{os.getuid()}" / f"{start}.lock"
    descriptor = os.open(lock, os.O_RDWR)
    try:
        assert not _can_lock(descriptor)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert _can_lock(descriptor)
    finally:
        os.close(descriptor)


def _can_lock(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    fcntl.flock(descriptor, fcntl.LOCK_UN)
    return True
