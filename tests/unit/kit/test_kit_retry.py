"""Per-item back-off and the line between an item's fault and the infrastructure's."""

from __future__ import annotations

from sqlalchemy import exc as sql_errors

from services.kit.retry import Backoff, is_transient


def test_a_failing_item_waits_twice_as_long_each_time_up_to_the_cap() -> None:
    now = [100.0]
    backoff = Backoff(base_seconds=1.0, cap_seconds=5.0, now=lambda: now[0])
    assert backoff.due("a") and backoff.due("b")
    waits = []
    for _ in range(5):
        backoff.failed("a")
        start = now[0]
        while not backoff.due("a"):
            now[0] += 0.5
        waits.append(now[0] - start)
    assert waits == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff.due("b")  # the others never wait for it
    backoff.failed("a")
    backoff.succeeded("a")
    assert backoff.due("a")
    backoff.failed("c")
    backoff.forget_all_but({"a"})
    assert backoff.due("c")


def test_connection_faults_are_transient_bad_values_are_the_items() -> None:
    assert is_transient(ConnectionRefusedError())
    assert is_transient(sql_errors.OperationalError("select", {}, Exception("gone")))
    assert is_transient(sql_errors.InterfaceError("select", {}, Exception("closed")))
    assert not is_transient(sql_errors.DataError("insert", {}, Exception("bigint out of range")))
    assert not is_transient(ValueError("bad payload"))
