"""Ports reserved together (a test's `tavla dev` laid out from one base): below the
kernel's client ports, free, and one process's alone until given back."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from services.kit.devstack import net
from services.kit.devstack.net import (
    BLOCK_SIZE,
    FIRST_PORT,
    ephemeral_range_start,
    free_port,
    reserve_ports,
)

RESERVE = ("from services.kit.devstack.net import reserve_ports\n"
           "r = reserve_ports(28); print(r.first, flush=True); input()\n")


def test_a_range_lies_below_the_client_ports_and_is_free() -> None:
    reserved = reserve_ports(28)
    try:
        assert reserved.first >= FIRST_PORT
        assert reserved.first + 28 <= ephemeral_range_start()
        for port in range(reserved.first, reserved.first + 28):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port))
    finally:
        reserved.release()


def test_no_other_process_and_no_free_port_of_this_one_lands_in_a_held_range() -> None:
    mine = reserve_ports(28)
    holder = subprocess.Popen([sys.executable, "-c", RESERVE], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        theirs = int(holder.stdout.readline())
        assert abs(theirs - mine.first) >= BLOCK_SIZE
        handed = [free_port() for _ in range(2 * BLOCK_SIZE)]
        assert not [p for p in handed if mine.first <= p < mine.first + BLOCK_SIZE]
        assert not [p for p in handed if theirs <= p < theirs + BLOCK_SIZE]
    finally:
        holder.communicate("\n", timeout=30)
        mine.release()


def test_a_block_with_a_port_bound_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    found = reserve_ports(28)
    found.release()
    monkeypatch.setattr(net, "_block_starts", lambda: [found.first])  # the only block
    with socket.socket() as squatter:  # not through the locks: some other program
        squatter.bind(("127.0.0.1", found.first + 27))
        with pytest.raises(RuntimeError, match="no block of 28 free ports"):
            reserve_ports(28)
    again = reserve_ports(28)  # its port given back: the block serves again
    again.release()
    assert again.first == found.first


def test_more_ports_than_a_block_are_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        reserve_ports(BLOCK_SIZE + 1)


def test_with_patience_a_caller_waits_for_a_block_to_come_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = reserve_ports(28)
    found.release()
    monkeypatch.setattr(net, "_block_starts", lambda: [found.first])  # the only block
    holder = reserve_ports(28)  # another stack's (its lock is held like another process's)
    try:
        with pytest.raises(RuntimeError, match="no block of 28 free ports"):
            reserve_ports(28)  # no patience: refused at once
        threading.Timer(1.5, holder.release).start()  # that stack ends in 1.5 s
        waited = reserve_ports(28, patience=30)
        waited.release()
        assert waited.first == found.first
    finally:
        holder.release()
