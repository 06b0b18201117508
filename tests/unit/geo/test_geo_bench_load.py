"""The geo benchmark's client figures: latency from when a call was due, the client's
own lateness apart, and a client that fell behind says so."""

from __future__ import annotations

from services.geo.bench_load import ClientRecord, LoadPlan, summarize

RATE = 1000.0
START = 100.0
WARMUP = 0.5


def plan(processes: int = 2) -> LoadPlan:
    return LoadPlan(address="127.0.0.1:1", gateway_address=None, run_dir="/nonexistent",
                    rate=RATE, total=2000, processes=processes,
                    warmup_seconds=WARMUP)  # fmt: skip


def on_time(processes: int, service_seconds: float, late: dict[int, float]) -> list[ClientRecord]:
    """Every call answered ``service_seconds`` after it was sent; call ``i`` sent
    ``late[i]`` seconds after it was due (else on time)."""
    records = [ClientRecord() for _ in range(processes)]
    for number in range(2000):
        record = records[number % processes]
        due = START + number / RATE
        sent = due + late.get(number, 0.0)
        record.due.append(due)
        record.sent.append(sent)
        record.answered.append(sent + service_seconds)
        record.codes.append("OK")
    return records


def test_a_client_on_time_reports_the_service_time_and_keeps_its_rate() -> None:
    figures = summarize(plan(), START, on_time(2, 0.002, {}))
    assert figures["grpc_calls_ok"] == 1500  # the warm-up's 500 calls are not counted
    assert figures["grpc_p50_ms"] == figures["grpc_p99_ms"] == 2.0
    assert figures["client_send_lag_p99_ms"] == 0.0
    assert figures["grpc_achieved_rate_per_s"] == RATE
    assert figures["client_kept_rate"] is True


def test_a_late_send_counts_against_the_latency_and_is_the_clients() -> None:
    # 30 calls in the window sent 50 ms late: 2% of 1,500.
    late = {number: 0.05 for number in range(1000, 1030)}
    figures = summarize(plan(), START, on_time(2, 0.002, late))
    assert figures["grpc_p99_ms"] == 52.0  # from when it was due
    assert figures["grpc_from_sent_p99_ms"] == 2.0  # from when it was sent
    assert figures["client_send_lag_p99_ms"] == 50.0
    assert figures["client_kept_rate"] is False


def test_a_call_sent_early_is_timed_from_its_send_and_errors_are_apart() -> None:
    records = on_time(1, 0.002, {number: -0.0005 for number in range(2000)})
    records[0].codes[1999] = "UNAVAILABLE"
    figures = summarize(plan(1), START, records)
    assert figures["grpc_p99_ms"] == 2.0
    assert figures["grpc_errors"] == 1 and figures["errors_by_code"] == {"UNAVAILABLE": 1}
    assert figures["grpc_calls_ok"] == 1499
