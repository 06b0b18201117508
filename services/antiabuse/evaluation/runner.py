"""``tavla abuse simulate`` and ``tavla abuse eval``: play a population, score the alerts.

``simulate`` plays the population of ``--seed`` and ``--players`` on the stack and
prints each account's id and labels (JSON lines). ``eval`` does the same, waits
until every consumer has caught up (``stack.py``), reads every alert on
``tavla.compliance.alerts.v1`` and prints, as its last line, the scores
(``scoring.py``). Both start their own ``tavla dev`` unless ``--attach``.

``eval --population held-out`` scores the held-out population instead (``heldout.py``:
other parameters and seeds, at least 500 honest accounts, never used to tune), its
facts applied to the anti-abuse consumer's handlers on a PostgreSQL of its own
(``feed.py``; ``TAVLA_DATABASE_URL``'s server when set); besides the scores it prints
the honest accounts the default policy would freeze and those in a pair restriction.
Given several seeds it plays each on a fresh database of its own, one after the other, and
prints, besides each seed's figures, each detector's figures pooled over the seeds (the
goal is judged on the pool: one seed is too small to bound the rates).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from services.antiabuse.domain.findings import Detector
from services.antiabuse.evaluation import decisions, feed, heldout
from services.antiabuse.evaluation import population as populations
from services.antiabuse.evaluation.players import Player, SimulationError, play_table
from services.antiabuse.evaluation.scoring import DetectorScore, result_line, score
from services.antiabuse.evaluation.scoring import pool as pool_runs
from services.antiabuse.evaluation.stack import DevStack, read_alerts
from services.kit.devstack.net import free_port
from services.kit.logging import configure
from tavla.antiabuse.v1.events_pb2 import Severity

if TYPE_CHECKING:  # the wheel's PostgreSQL is imported only by the runs that start one
    from services.kit.devstack.postgres import PostgresServer
    from services.kit.devstack.supervisor import Supervisor

Progress = Callable[[str], None]
DEFAULT_PLAYERS = 24
POPULATIONS = ("tuning", "held-out")
POOL_POSITIONS, POOL_SEED = 600, 1205  # the engine's positions the held-out decisions use
GOAL_RECALL, GOAL_FALSE_POSITIVE_RATE = 0.9, 0.01
# Evidence figures worth a line of progress (assistance's, disconnects', win trading's).
FIGURES = ("decisions", "z_engine", "z_timing", "abandoned", "losing", "shares", "sessions",
           "alternations", "p_value")


def progress_to_stderr(line: str) -> None:
    print(f"[tavla abuse] {line}", file=sys.stderr, flush=True)


async def simulate(stack: DevStack, population: populations.Population, progress: Progress
                   ) -> dict[str, Player]:
    """Sign every persona up and play every round; the players by persona name."""
    started = time.monotonic()
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60, limits=limits) as client:
        players = {
            name: Player(persona, client, rng=random.Random(f"{population.seed}-{name}"))
            for name, persona in population.personas.items()
        }
        gate = asyncio.Semaphore(6)  # argon2 at registration and login: not all at once

        async def sign_up(player: Player) -> None:
            async with gate:
                await player.sign_up()

        await asyncio.gather(*(sign_up(p) for p in players.values()))
        await asyncio.gather(*(wait_funded(p) for p in players.values()))
        progress(f"{len(players)} accounts signed up and funded "
                 f"({time.monotonic() - started:.0f}s)")
        await play_rounds(population, players, progress, started)
    return players


async def play_rounds(population: populations.Population, players: dict[str, Player],
                      progress: Progress, started: float) -> None:
    """Every table, each as soon as its players are free.

    A group's tables (one account at several tables, in every round) are played by
    ``population.at_once[group]`` workers, each taking the next table when its last one
    ends and holding only the opponent's lock (the group's account plays nowhere else);
    its optional tables are left out once their host has walked away from
    :data:`~services.antiabuse.evaluation.population.WALKS_WANTED` games. Other tables
    take their players' locks in the schedule's order (asyncio's locks are
    first come, first served; always in name order, so no two tables wait for each
    other): a player's games follow the rounds, without a round waiting for its slowest
    game. A consultant's two tables are one job, both played at once. Progress names
    how the games ended (borne off, cube dropped, resigned, disconnection, ...).
    """
    locks = {name: asyncio.Lock() for name in players}
    jobs: list[list[populations.Table]] = []
    groups: dict[str, list[populations.Table]] = {}
    for tables in population.rounds:
        by_host = {t.host: t for t in tables}
        for table in tables:
            if table.group:
                groups.setdefault(table.group, []).append(table)
            elif not table.concurrent_with:
                jobs.append([table])
            elif table.host < table.concurrent_with:  # the pair once: both tables at once
                jobs.append([table, by_host[table.concurrent_with]])
    total = sum(len(job) for job in jobs) + sum(len(g) for g in groups.values())
    endings: Counter[str] = Counter()

    def ended(reasons: list[str]) -> None:
        endings.update(r.removeprefix("END_REASON_").removeprefix("GAME_STATUS_").lower()
                       for r in reasons)
        done = sum(endings.values())
        if done % 5 == 0 or done == total:
            progress(f"{done}/{total} games played or not needed "
                     f"({time.monotonic() - started:.0f}s): "
                     + ", ".join(f"{n} {reason}" for reason, n in sorted(endings.items())))

    async def play(job: list[populations.Table]) -> None:
        async with AsyncExitStack() as held:
            for name in sorted({n for t in job for n in (t.host, t.guest)}):
                await held.enter_async_context(locks[name])
            reasons = await asyncio.gather(*(play_table(table, players) for table in job))
        ended(list(reasons))

    async def multi_table(tables: list[populations.Table]) -> None:
        queue = list(reversed(tables))

        async def worker() -> None:
            while queue:
                # The next table whose opponent is free (one busy elsewhere is left for
                # later rather than waited for, as a player picks an open table).
                table = next((t for t in reversed(queue) if not locks[t.guest].locked()), None)
                if table is None:
                    await asyncio.sleep(0.2)
                    continue
                queue.remove(table)
                if table.optional and players[table.host].walks >= populations.WALKS_WANTED:
                    ended(["not needed"])
                    continue
                async with locks[table.guest]:
                    reason = await play_table(table, players)
                ended([reason])

        await asyncio.gather(*(worker() for _ in range(population.at_once[tables[0].group])))

    await asyncio.gather(*(play(job) for job in jobs),
                         *(multi_table(tables) for tables in groups.values()))
    walked = {name: p.walks for name, p in players.items() if p.walks}
    progress(f"walked away from losing games: {walked or 'nobody'}")


async def wait_funded(player: Player) -> None:
    """The sandbox confirms a deposit shortly after it is made."""
    for _ in range(240):
        if await player.funded():
            return
        await asyncio.sleep(0.25)
    raise SimulationError(f"{player.persona.name}: the deposit never landed")


def flagged_accounts(alerts: list[Any]) -> dict[Detector, set[str]]:
    """Accounts each detector named in any alert (``detector`` is the Detector's value)."""
    names = {d.value: d for d in Detector}
    flagged: dict[Detector, set[str]] = {d: set() for d in Detector}
    for alert in alerts:
        if alert.detector in names:
            flagged[names[alert.detector]].update(alert.subject_account_ids)
    return flagged


def describe(alert: Any, names: dict[str, str]) -> str:
    """One alert in a line: detector, severity, score, subjects by persona, key figures."""
    figures = "; ".join(f"{k}={v}" for e in alert.evidence for k, v in e.details.items()
                        if k in FIGURES)
    subjects = ", ".join(names.get(a, a) for a in alert.subject_account_ids)
    return (f"alert {alert.detector} {Severity.Name(alert.severity)} score {alert.score:.4g}: "
            f"{subjects}" + (f" ({figures})" if figures else ""))


async def evaluate(stack: DevStack, seed: int, players_count: int, progress: Progress
                   ) -> dict[str, object]:
    population = populations.build(seed, players_count)
    progress(f"population of seed {seed}: " + ", ".join(
        f"{len(population.of(role))} {role.value}" for role in populations.Role))
    players = await simulate(stack, population, progress)
    await stack.wait_caught_up(progress)
    alerts = await read_alerts(stack.bootstrap)
    progress(f"{len(alerts)} alert events on the compliance stream")
    names = {p.account_id: p.persona.name for p in players.values()}
    for alert in alerts:  # what each run found, for a person reading the log
        progress(describe(alert, names))
    await report_analysed(stack, [p for p in players.values()
                                  if Detector.ASSISTANCE in p.persona.labels], progress)
    labels = {p.account_id: p.persona.labels for p in players.values()}
    scores = score(labels, flagged_accounts(alerts))
    for line in goal_lines(scores):
        progress(line)
    return {**result_line(scores), "population": "tuning", "seed": seed}


async def report_analysed(stack: DevStack, players: list[Player], progress: Progress) -> None:
    """What the analysis service made of each player's games, as the player reads it
    through the gateway: how many of its games were analysed, its counted decisions,
    its error per decision (assistance judges these) and its think time. For a person
    reading a run whose assistance figure is short: was the play not analysed, too
    little, or not close enough to the engine?"""
    async with httpx.AsyncClient(base_url=stack.gateway, timeout=60) as client:
        for player in players:
            player.client = client  # the simulation's client is closed by now
            analyses = [await player.call("GET", f"/v1/games/{game_id}/analysis", ok=(200, 404))
                        for game_id in player.games]
            own = [p for a in analyses for p in a.get("players", [])
                   if p.get("accountId") == player.account_id]
            counted = [int(p.get("checkerDecisions", 0)) + int(p.get("cubeDecisions", 0))
                       for p in own]
            error = sum(n * float(p.get("errorPerDecision", 0.0))
                        for n, p in zip(counted, own, strict=True))
            seconds = [float(p["secondsPerDecision"]) for p in own if "secondsPerDecision" in p]
            progress(f"{player.persona.name}: {len(own)} of {len(player.games)} games analysed, "
                     f"{sum(counted)} counted decisions, error per decision "
                     f"{error / max(1, sum(counted)):.5f}, mean think time per game "
                     + (f"{min(seconds):.2f}-{max(seconds):.2f} s" if seconds else "none"))


async def _with_stack(args: argparse.Namespace, work: Callable[[DevStack], Any]) -> Any:
    stack = DevStack.attach() if args.attach else await DevStack.start_healthy(progress_to_stderr)
    try:
        await stack.wait_healthy()
        progress_to_stderr(f"gateway {stack.gateway} healthy")
        return await work(stack)
    finally:
        if not args.attach:
            stack.stop()


def goal_lines(scores: dict[Detector, DetectorScore]) -> list[str]:
    """Each detector against the goal, its intervals included, one line each."""
    lines = []
    for detector, figures in scores.items():
        low, high = figures.recall_interval
        fpr_low, fpr_high = figures.false_positive_rate_interval
        met = figures.meets(GOAL_RECALL, GOAL_FALSE_POSITIVE_RATE)
        lines.append(
            f"{detector.value}: recall {figures.true_positives}/{figures.positives} = "
            f"{figures.recall:.3f} (95% {low:.3f}-{high:.3f}), false positives "
            f"{figures.false_positives}/{figures.negatives} = {figures.false_positive_rate:.4f} "
            f"(95% {fpr_low:.4f}-{fpr_high:.4f}): {'meets' if met else 'misses'} the goal "
            f"(recall >= {GOAL_RECALL}, upper bound <= {GOAL_FALSE_POSITIVE_RATE})")
    return lines


@dataclasses.dataclass(frozen=True)
class HeldOutRun:
    """One seed's held-out run: each detector's score and the honest accounts acted on."""

    seed: int
    scores: dict[Detector, DetectorScore]
    honest: int
    honest_frozen: int
    honest_restricted: int
    losing_stop_share: float
    seconds: int

    def as_json(self) -> dict[str, object]:
        return {**result_line(self.scores), "population": "held-out", "seed": self.seed,
                "honest": self.honest, "honest_frozen": self.honest_frozen,
                "honest_restricted": self.honest_restricted,
                "losing_stop_share": round(self.losing_stop_share, 4), "seconds": self.seconds}


async def run_held_out(database_url: str, seed: int, progress: Progress) -> HeldOutRun:
    """The held-out population of ``seed`` applied on the fresh database at
    ``database_url``: its scores, with the honest accounts frozen or restricted."""
    started = time.monotonic()
    positions = await asyncio.to_thread(decisions.cached, POOL_POSITIONS, POOL_SEED)
    params = dataclasses.replace(heldout.HELD_OUT, seed=seed)
    world = await asyncio.to_thread(heldout.build, params, positions)
    kinds = Counter(a.kind.value for a in world.accounts.values())
    progress(f"held-out population of seed {seed}: {dict(kinds)}; {len(world.facts)} facts "
             f"({time.monotonic() - started:.0f}s); honest stops at a losing position: "
             f"{world.losing_stop_share:.3f} of {len(world.stops)}, "
             f"honest drops that came back: {world.returns}")
    outcome = await feed.run(world, database_url, progress)
    labels = {a.account_id: a.labels for a in world.accounts.values()}
    names = {a.account_id: f"{a.kind.value}:{a.account_id[:8]}" for a in world.accounts.values()}
    flagged = flagged_accounts(outcome.alerts)
    honest = {a for a, marks in labels.items() if not marks}
    for detector, accounts in flagged.items():  # the false alarms, for a person to read
        for alert in outcome.alerts:
            if alert.detector == detector.value and set(alert.subject_account_ids) & (
                    accounts - {a for a, m in labels.items() if detector in m}):
                progress("false alarm: " + describe(alert, names))
    scores = score(labels, flagged)
    for line in goal_lines(scores):
        progress(line)
    run = HeldOutRun(seed=seed, scores=scores, honest=len(honest),
                     honest_frozen=len(honest & outcome.frozen),
                     honest_restricted=len(honest & outcome.restricted),
                     losing_stop_share=world.losing_stop_share,
                     seconds=round(time.monotonic() - started))
    progress(f"honest accounts frozen automatically: {run.honest_frozen}, in a pair "
             f"restriction: {run.honest_restricted} (goal: 0 and 0); "
             f"{outcome.seconds:.0f}s to apply the facts")
    return run


async def evaluate_held_out(database_url: str, seed: int, progress: Progress
                            ) -> dict[str, object]:
    """One seed's held-out run (``run_held_out``) as its result line."""
    return (await run_held_out(database_url, seed, progress)).as_json()


async def evaluate_held_out_pooled(seeds: Sequence[int], new_database: Callable[[], str],
                                   progress: Progress) -> dict[str, object]:
    """The held-out population of each of ``seeds``, each on a fresh database of
    ``new_database``, one after the other, then the runs pooled (``scoring.pool``): the
    goal is judged on the pool, since one seed's dozen abusers and 650 honest accounts
    bound its rates too loosely. The result line: the pooled figures, the honest
    accounts acted on summed over the seeds, and each seed's own line under ``runs``."""
    runs: list[HeldOutRun] = []
    for number, seed in enumerate(seeds, 1):
        progress(f"held-out seed {seed} ({number} of {len(seeds)})")
        runs.append(await run_held_out(new_database(), seed, progress))
    pooled = pool_runs(run.scores for run in runs)
    progress(f"pooled over {len(runs)} seeds ({', '.join(str(s) for s in seeds)}):")
    for line in goal_lines(pooled):
        progress(f"pooled {line}")
    result: dict[str, object] = {
        **result_line(pooled), "population": "held-out", "seeds": list(seeds),
        "honest": sum(r.honest for r in runs),
        "honest_frozen": sum(r.honest_frozen for r in runs),
        "honest_restricted": sum(r.honest_restricted for r in runs),
        "seconds": sum(r.seconds for r in runs),
        "runs": [r.as_json() for r in runs],
    }
    progress(f"pooled: honest accounts frozen automatically {result['honest_frozen']}, in a "
             f"pair restriction {result['honest_restricted']} of {result['honest']} "
             f"(goal: 0 and 0)")
    return result


def _held_out_databases() -> tuple[Callable[[], str], Callable[[], None]]:
    """Fresh databases for held-out runs, one per call of the first callable: on
    ``TAVLA_DATABASE_URL``'s server, or on a PostgreSQL of its own in a temp dir (stopped
    by the second callable)."""
    from services.kit.devstack.postgres import ensure_database, with_database
    from services.kit.devstack.supervisor import Supervisor

    def fresh_name() -> str:
        return f"antiabuse_heldout_{random.SystemRandom().randrange(16**8):08x}"

    given = os.environ.get("TAVLA_DATABASE_URL")
    if given:
        def on_given() -> str:
            name = fresh_name()
            ensure_database(given, name)
            return with_database(given, name)

        return on_given, lambda: None
    temp = tempfile.TemporaryDirectory(prefix="tavla-heldout-")
    supervisor = Supervisor(Path(temp.name))

    def stop() -> None:
        supervisor.stop_all()
        temp.cleanup()

    try:
        server = _own_postgres(Path(temp.name) / "postgres", supervisor)
    except BaseException:
        stop()
        raise

    def on_own() -> str:
        name = fresh_name()
        server.create_database(name)
        return server.url(name)

    return on_own, stop


def _own_postgres(data_dir: Path, supervisor: Supervisor, attempts: int = 8) -> PostgresServer:
    """A server started here, on a free port below the ephemeral range (``free_port``: no
    client connection takes it, and no other process of the machine's user is handed it).
    Should a program outside those reservations bind it first, the server cannot bind it
    (``PortInUse``), never adopts the other's, and tries another port."""
    from services.kit.devstack.postgres import PortInUse, PostgresServer

    tried: list[int] = []
    for _ in range(attempts):
        port = free_port()
        tried.append(port)
        server = PostgresServer(data_dir, port, supervisor)
        try:
            server.start()
            return server
        except PortInUse:
            continue
    raise RuntimeError(f"no PostgreSQL port of its own in {attempts} attempts: {tried}")


def _eval_held_out(args: argparse.Namespace) -> int:
    configure("antiabuse", "warning")  # an info line per alert would bury the progress
    new_database, stop = _held_out_databases()
    try:
        if len(args.seed) == 1:
            result = asyncio.run(evaluate_held_out(new_database(), args.seed[0],
                                                   progress_to_stderr))
        else:
            result = asyncio.run(evaluate_held_out_pooled(args.seed, new_database,
                                                          progress_to_stderr))
    finally:
        stop()
    print(json.dumps(result), flush=True)
    return 0


def _eval(args: argparse.Namespace) -> int:
    if args.population == "held-out":
        return _eval_held_out(args)
    if len(args.seed) != 1:
        print("tavla abuse eval: the tuning population takes one --seed", file=sys.stderr)
        return 2

    async def work(stack: DevStack) -> dict[str, object]:
        return await evaluate(stack, args.seed[0], args.players, progress_to_stderr)

    try:
        result = asyncio.run(_with_stack(args, work))
    except (SimulationError, ValueError, TimeoutError, RuntimeError) as error:
        print(f"tavla abuse eval: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


def _simulate(args: argparse.Namespace) -> int:
    async def work(stack: DevStack) -> dict[str, Player]:
        population = populations.build(args.seed, args.players)
        return await simulate(stack, population, progress_to_stderr)

    try:
        players = asyncio.run(_with_stack(args, work))
    except (SimulationError, ValueError, TimeoutError, RuntimeError) as error:
        print(f"tavla abuse simulate: {error}", file=sys.stderr)
        return 1
    for player in players.values():
        print(json.dumps({"account_id": player.account_id, "name": player.persona.name,
                          "role": player.persona.role.value,
                          "labels": sorted(d.value for d in player.persona.labels)}))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    abuse = subparsers.add_parser("abuse", help="anti-abuse evaluation: labelled populations")
    commands = abuse.add_subparsers(dest="abuse_command", required=True, metavar="COMMAND")
    for name, handler, text in (
        ("simulate", _simulate, "play a labelled population; its accounts and labels as JSON"),
        ("eval", _eval, "play a population and print each detector's precision and recall"),
    ):
        command = commands.add_parser(name, help=text)
        if name == "eval":
            command.add_argument(
                "--seed", type=int, nargs="+", default=None, metavar="SEED",
                help="population seed (default: a fresh one, printed; held-out: the held-out "
                     "one). The held-out population takes several: each seed's world on a "
                     "fresh database of its own and its table printed, then each detector's "
                     "figures pooled over the seeds (counts summed, Wilson intervals on the "
                     "sums), the goal judged on the pool; the tuning population takes one")
        else:
            command.add_argument("--seed", type=int, default=None,
                                 help="population seed (default: a fresh one, printed)")
        command.add_argument("--players", type=int, default=DEFAULT_PLAYERS,
                             help=f"accounts in the population (default {DEFAULT_PLAYERS})")
        command.add_argument("--attach", action="store_true",
                             help="use the running tavla dev (found by TAVLA_DEV_PORT_OFFSET or "
                                  "TAVLA_DEV_PORT_BASE) instead of starting one")
        if name == "eval":
            command.add_argument(
                "--population", choices=POPULATIONS, default="tuning",
                help="tuning: the population the detectors were written against, played "
                     "through the gateway (default); held-out: other parameters and seeds, "
                     "500+ honest accounts, its facts applied to the anti-abuse consumer "
                     "(--seed picks its seed or seeds, default the held-out one; --players "
                     "and --attach do not apply)")
        command.set_defaults(handler=_fresh_seed(handler))


def _fresh_seed(handler: Callable[[argparse.Namespace], int]
                ) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        population = getattr(args, "population", None)  # eval's seeds are a list
        if args.seed is None:
            args.seed = (heldout.HELD_OUT.seed if population == "held-out"
                         else random.SystemRandom().randrange(1, 2**31))
            if population is not None:
                args.seed = [args.seed]
        shown = args.seed if population is None else " ".join(str(s) for s in args.seed)
        progress_to_stderr(f"{'seeds' if population and len(args.seed) > 1 else 'seed'} {shown}")
        return handler(args)

    return run
