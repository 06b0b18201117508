"""A cluster's size from one run of ``tavla bench platform`` (``tavla capacity RUN.json``).

docs/capacity.md explains the model; this module is its arithmetic, so that the page's
tables are printed from the bench's JSON line rather than worked by hand:

- a service's work grows with concurrent games ``G``: ``net = over_idle / 1000 x G / 60``
  cores, from its CPU seconds per 1,000 game-minutes over idle;
- a pod is one process (one event loop: about one core at most), requests ``request``
  cores and is kept at ``target`` of it by the autoscaler, and pays its idle cost
  (pollers, relays, sweeps) whatever the load: ``pods = max(2, ceil(net / (request x
  target - idle)))``, ``cores used = net + pods x idle``;
- a database's transactions and a topic's events per second grow the same way, plus each
  pod's idle transactions.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MIN_PODS = 2  # a node drain or a crash never leaves a service without a pod
GAMES = (10_000, 50_000, 200_000)


@dataclass(frozen=True)
class PodPolicy:
    """What one pod of a service requests, and the share of it the autoscaler keeps busy."""

    request_cores: float
    target: float
    floor_cpu_s_per_1000_game_minutes: float = 0.0  # planned at no less than this

    @property
    def usable(self) -> float:
        return self.request_cores * self.target


# The players' path (game, wallet) and analysis at 60 %, so a burst or a lost node does not
# push p99 into a queue; anti-abuse at 80 % (a consumer: a little lag is fine); the others at
# 70 %, on half a core (their work per game is small; they are sized for logins, queues and
# the lobby, which the bench does not play). The wallet's work is near the bench's resolution
# (its idle swings by about 20 CPU s per 1,000 game-minutes at 16 tables), so it is planned
# at no less than that.
POLICIES: Mapping[str, PodPolicy] = {
    "game": PodPolicy(1.0, 0.60),
    "wallet": PodPolicy(1.0, 0.60, floor_cpu_s_per_1000_game_minutes=20.0),
    "analysis": PodPolicy(1.0, 0.60),
    "antiabuse": PodPolicy(1.0, 0.80),
    "matchmaking": PodPolicy(0.5, 0.70),
    "accounts": PodPolicy(0.5, 0.70),
    "geo": PodPolicy(0.5, 0.70),
}


@dataclass(frozen=True)
class ServiceSize:
    service: str
    games: int
    net_cores: float
    pods: int
    cores_used: float
    cores_requested: float


def size_service(
    service: str, over_idle: float, idle_per_pod: float, games: int, policy: PodPolicy
) -> ServiceSize:
    """Pods and cores for ``games`` concurrent games (see the module's docstring)."""
    work = max(over_idle, policy.floor_cpu_s_per_1000_game_minutes)
    net = work / 1000 * games / 60
    per_pod = policy.usable - idle_per_pod
    if per_pod <= 0:
        raise ValueError(f"{service}: a pod's idle cost ({idle_per_pod}) leaves it no room")
    pods = max(MIN_PODS, math.ceil(net / per_pod))
    return ServiceSize(
        service, games, net, pods, net + pods * idle_per_pod, pods * policy.request_cores
    )


def cluster(run: Mapping[str, Any], games: Iterable[int] = GAMES) -> list[ServiceSize]:
    """Every service of the run, sized for each count of games."""
    sizes = []
    for service, figures in run["services"].items():
        policy = POLICIES.get(service)
        if policy is None:
            raise ValueError(f"no pod policy for {service!r}: add it to POLICIES")
        for count in games:
            over_idle = figures["cpu_s_per_1000_game_minutes_over_idle"]
            idle = figures["idle_cpu_share_of_core"]
            sizes.append(size_service(service, over_idle, idle, count, policy))
    return sizes


def per_game_minute(run: Mapping[str, Any], per_game: float) -> float:
    minutes = run.get("minutes_per_game")
    if not minutes:
        raise ValueError(
            "the run ended no game (minutes_per_game is null): run the bench longer or "
            "with shorter thought, so that games end in its window"
        )
    return float(per_game) / float(minutes)


@dataclass(frozen=True)
class DatabaseLoad:
    """A service's database transactions in the run: per game-minute, and a pod's idle rate."""

    gross_per_game_minute: float
    over_idle_per_game_minute: float
    idle_per_pod_per_s: float


def database_load(run: Mapping[str, Any], service: str) -> DatabaseLoad:
    """The run's ``idle_db_xacts_per_s`` is the database's, all the service's processes
    together; over the window they account for ``idle x seconds`` of the transactions."""
    figures = run["services"][service]
    gross = per_game_minute(run, figures["db_xacts_per_game"])
    idle = float(figures["idle_db_xacts_per_s"])
    over_idle = max(0.0, gross - idle * float(run["seconds"]) / float(run["game_minutes"]))
    return DatabaseLoad(gross, over_idle, idle / figures["processes"])


def database_rates(
    run: Mapping[str, Any], sizes: Sequence[ServiceSize]
) -> dict[str, dict[int, float]]:
    """Each service's database transactions per second at each size: its share of the games'
    transactions over idle, plus every pod's idle ones."""
    rates: dict[str, dict[int, float]] = {}
    for service in run["services"]:
        load = database_load(run, service)
        rates[service] = {
            size.games: load.over_idle_per_game_minute * size.games / 60
            + size.pods * load.idle_per_pod_per_s
            for size in sizes
            if size.service == service
        }
    return rates


def markdown(run: Mapping[str, Any], games: Sequence[int] = GAMES) -> str:
    """docs/capacity.md's tables for this run."""
    sizes = cluster(run, games)
    head = " | ".join(f"{g:,} games: cores used / pods / cores requested" for g in games)
    lines = [f"| service | pod: request, HPA target | {head} |",
             "|---|---|" + "---|" * len(games)]  # fmt: skip
    for service in run["services"]:
        policy = POLICIES[service]
        sized = [
            f"{s.cores_used:,.1f} / {s.pods:,} / {s.cores_requested:,.1f}"
            for s in sizes
            if s.service == service
        ]
        pod = f"{policy.request_cores:g} core, {policy.target:.0%}"
        lines.append(f"| {service} | {pod} | " + " | ".join(sized) + " |")
    totals = [
        f"{sum(s.cores_used for s in sizes if s.games == g):,.1f} / "
        f"{sum(s.pods for s in sizes if s.games == g):,} / "
        f"{sum(s.cores_requested for s in sizes if s.games == g):,.1f}"
        for g in games
    ]
    lines.append("| all | | " + " | ".join(totals) + " |")
    rates = database_rates(run, sizes)
    at = " | ".join(f"{g:,} games" for g in games)
    lines += ["", f"| database of | xacts a game-minute | over idle | idle a pod | {at} |",
              "|---|---|---|---|" + "---|" * len(games)]  # fmt: skip
    for service, by_games in rates.items():
        load = database_load(run, service)
        per_minute = (
            f"{load.gross_per_game_minute:,.1f} | {load.over_idle_per_game_minute:,.1f} | "
            f"{load.idle_per_pod_per_s:,.1f}/s"
        )
        cells = " | ".join(f"{by_games[g]:,.0f}/s" for g in games)
        lines.append(f"| {service} | {per_minute} | {cells} |")
    all_rates = " | ".join(f"{sum(r[g] for r in rates.values()):,.0f}/s" for g in games)
    lines.append(f"| all | | | | {all_rates} |")
    events = per_game_minute(run, run["broker"]["events_per_game"])
    at_sizes = ", ".join(f"{events * g / 60:,.0f}/s at {g:,} games" for g in games)
    lines += ["", f"Broker: {events:,.2f} events a game-minute: {at_sizes}."]
    return "\n".join(lines)


def _handle(args: argparse.Namespace) -> int:
    lines = [line for line in Path(args.run).read_text().splitlines() if line.startswith("{")]
    if not lines:
        print(f"{args.run}: no JSON line of `tavla bench platform` in it", file=sys.stderr)
        return 2
    try:
        print(markdown(json.loads(lines[-1]), args.games))
    except (KeyError, ValueError) as error:
        print(f"{args.run}: {error}", file=sys.stderr)
        return 2
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``capacity`` to the ``tavla`` command."""
    parser = subparsers.add_parser(
        "capacity",
        help="size a cluster from a `tavla bench platform` run (docs/capacity.md's tables)",
    )
    parser.add_argument("run", help="a file holding the bench's JSON line (its output)")
    parser.add_argument(
        "--games", type=int, nargs="+", default=list(GAMES),
        help="concurrent games to size for (default 10000 50000 200000)",
    )  # fmt: skip
    parser.set_defaults(handler=_handle)


__all__ = [
    "POLICIES", "DatabaseLoad", "PodPolicy", "ServiceSize", "cluster", "database_load",
    "database_rates", "markdown", "register", "size_service",
]  # fmt: skip
