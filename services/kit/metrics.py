"""Prometheus metrics shared by every service, served on the service's /metrics port."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, start_http_server

RPC_REQUESTS = Counter(
    "tavla_rpc_requests",
    "gRPC calls handled, by method and status code.",
    ["service", "method", "code"],
)
RPC_DURATION = Histogram(
    "tavla_rpc_duration_seconds",
    "gRPC call latency.",
    ["service", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
EVENTS_PUBLISHED = Counter(
    "tavla_events_published", "Outbox events published to Kafka.", ["service", "topic"]
)
EVENTS_CONSUMED = Counter(
    "tavla_events_consumed",
    "Events received by consumers, by outcome (applied or duplicate).",
    ["service", "topic", "outcome"],
)
CONSUMER_LAG = Gauge(
    "tavla_consumer_lag",
    "Records on the broker a consumer group has not applied yet (the backlog), by topic: "
    "the partitions' high watermark as the last fetch saw it, less the group's position.",
    ["service", "consumer", "topic"],
)
EVENTS_RETRIED = Counter(
    "tavla_events_retried",
    "Handler attempts that failed and were tried again after a back-off.",
    ["service", "consumer"],
)
BATCHES_RETRIED = Counter(
    "tavla_consumer_batches_retried",
    "Consumer batches tried again in place because the database or network was away.",
    ["service", "consumer"],
)
EVENTS_PARKED = Counter(
    "tavla_events_parked",
    "Events a consumer set aside instead of applying, by reason: handler (it failed every "
    "attempt), behind_parked (an earlier event of its key is parked), signature (its "
    "producer is not proven), malformed (no CloudEvents headers).",
    ["service", "consumer", "reason"],
)
EVENTS_PARKED_OPEN = Gauge(
    "tavla_events_parked_open",
    "Parked events not yet replayed or discarded (tavla events parked lists them).",
    ["service", "consumer"],
)
OUTBOX_PENDING = Gauge("tavla_outbox_pending", "Outbox events not yet published.", ["service"])
# Pauses of a service's event loop (services/kit/loop_watch.py): whatever holds the loop
# holds every call in flight.
PAUSE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
GC_PAUSE = Histogram(
    "tavla_gc_pause_seconds",
    "Wall time of each pass of the cyclic garbage collector, by generation.",
    ["service", "generation"],
    buckets=PAUSE_BUCKETS,
)
EVENT_LOOP_LAG = Histogram(
    "tavla_event_loop_lag_seconds",
    "How late the event loop woke a task sleeping a fixed interval (sampled stalls).",
    ["service"],
    buckets=PAUSE_BUCKETS,
)
GROUP_COMMIT = Histogram(
    "tavla_group_commit_seconds",
    "Wall time of each group commit (one statement recording the events of the calls "
    "queued meanwhile; geo's decision log), from its sending to the database's answer.",
    ["service"],
    buckets=PAUSE_BUCKETS,
)
READY = Gauge("tavla_ready", "1 while the database and the broker are reachable.", ["service"])


def serve_metrics(port: int, bind: str = "127.0.0.1") -> None:
    """Start the /metrics HTTP endpoint in a daemon thread (port 0: disabled).

    Labels carry service, method, status, topic and outcome names only: never an
    account, game, hold or token, so a scrape tells a player nothing about anyone.
    """
    if port:
        start_http_server(port, addr=bind)
