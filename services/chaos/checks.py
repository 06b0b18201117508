"""What ``tavla chaos`` checks after a fault: produced, published, settled, audited.

Three records are read back and compared (:func:`judge`, pure):

- *produced*: every ``GameEnded`` of a money game at a chaos table that the game
  service recorded in its outbox (the same transaction as the game's end: what
  the game database says it produced);
- *published*: every ``GameEnded`` on the broker's ``tavla.game.v1``, read from
  the beginning of each partition as no consumer group;
- *settled*: the wallet's settlement records of the chaos tables.

A game is *lost* when its ending is missing from the broker or the wallet has no
settlement for it; a *duplicate* when it ended twice (two endings with different
event ids, produced or published), when the wallet recorded more than one
settlement for it, or when the wallet settled a game nobody produced. The same
event delivered twice (same id) is at-least-once delivery working as designed
and is counted apart (``redelivered``). The books are checked by the audit of the operator's
command ``tavla wallet audit`` (:func:`audit_now`), and by the command itself as a
separate process (:func:`audit_command`) once the load stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.chaos.load import TABLE_PREFIX
from services.kit.benchstack import REPO_ROOT
from services.kit.db import make_engine
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2

GAME_TOPIC = "tavla.game.v1"
GAME_ENDED = game_events.GameEnded.DESCRIPTOR.full_name
AUDIT_OK = "ok"


@dataclass(frozen=True)
class Ending:
    """One ``GameEnded`` as the game recorded or the broker carries it."""

    event_id: str
    settlement_id: str  # what the wallet names its settlement: "<game id>:<game number>"
    game_id: str
    disconnection: bool
    analysed: bool
    reason: str  # END_REASON_... without the prefix, lower case: what ended the game


@dataclass(frozen=True)
class Settled:
    """The wallet's settlement records of one game."""

    records: int
    settled: int  # the records whose money moved (the rest were rejected)
    real_money: bool  # in a currency other than PLAY


@dataclass(frozen=True)
class Verdict:
    games: int  # the games judged
    settled: int
    rejected: int
    lost: int
    duplicates: int
    redelivered: int
    examples: tuple[str, ...]  # a few settlement ids of lost or duplicated games

    @property
    def clean(self) -> bool:
        return self.lost == 0 and self.duplicates == 0


def ending_of(event_id: str, payload: bytes) -> Ending | None:
    """The ending a ``GameEnded`` payload records; None for a game inside a match (its
    match settles it) or at a table that is not a chaos table."""
    ended = game_events.GameEnded.FromString(payload)
    if ended.kind != game_pb2.PLAY_KIND_MONEY_GAME or not ended.table_id.startswith(TABLE_PREFIX):
        return None
    return Ending(
        event_id=event_id,
        settlement_id=f"{ended.game_id}:{ended.game_number}",
        game_id=ended.game_id,
        disconnection=ended.reason == game_pb2.END_REASON_DISCONNECTION,
        analysed=ended.analysed,
        reason=game_pb2.EndReason.Name(ended.reason).removeprefix("END_REASON_").lower(),
    )


def judge(
    produced: Iterable[Ending],
    published: Iterable[Ending],
    settled: Mapping[str, Settled],
    only: set[str] | None = None,
) -> Verdict:
    """Compare the three records for the games of ``produced`` (those of ``only``, by
    settlement id, when given: endings produced after the check began are still in transit)."""
    produced_ids: dict[str, set[str]] = defaultdict(set)
    for ending in produced:
        if only is None or ending.settlement_id in only:
            produced_ids[ending.settlement_id].add(ending.event_id)
    published_ids: dict[str, set[str]] = defaultdict(set)
    deliveries: Counter[str] = Counter()
    for ending in published:
        published_ids[ending.settlement_id].add(ending.event_id)
        deliveries[ending.event_id] += 1
    lost, duplicated = [], []
    for game, event_ids in produced_ids.items():
        record = settled.get(game)
        if not event_ids <= published_ids.get(game, set()) or record is None:
            lost.append(game)
        if (
            len(event_ids) > 1
            or len(published_ids.get(game, ())) > 1
            or (record is not None and record.records > 1)
        ):
            duplicated.append(game)
    if only is None:  # money moved for a game that never ended
        duplicated += [game for game in settled if game not in produced_ids]
    judged = [settled[game] for game in produced_ids if game in settled]
    return Verdict(
        games=len(produced_ids),
        settled=sum(1 for record in judged if record.settled),
        rejected=sum(1 for record in judged if not record.settled),
        lost=len(lost),
        duplicates=len(duplicated),
        redelivered=sum(count - 1 for count in deliveries.values()),
        examples=tuple(sorted(lost + duplicated)[:5]),
    )


# ------------------------------------------------------------------ reading the records

_PRODUCED = text("SELECT event_id, payload FROM outbox WHERE ce_type = :ce_type ORDER BY seq")
_SETTLED = text(
    "SELECT game_id || ':' || game_number, count(*), count(*) FILTER (WHERE status = 'settled'), "
    "bool_or(currency <> 'PLAY') FROM settlements WHERE table_id LIKE :tables "
    "GROUP BY game_id, game_number"
)


@contextlib.asynccontextmanager
async def database(url: str) -> AsyncIterator[AsyncEngine]:
    """An engine of one connection for a loop of reads (a connection each read would cost
    the server a backend process each time), disposed after."""
    engine = make_engine(url, pool_size=1)
    try:
        yield engine
    finally:
        await engine.dispose()


async def _rows(
    source: str | AsyncEngine, query: TextClause, **values: str
) -> list[tuple[Any, ...]]:
    """``query``'s rows, on ``source``'s engine or on one made for the read."""
    if isinstance(source, str):
        async with database(source) as engine:
            return await _rows(engine, query, **values)
    async with source.connect() as connection:
        return [tuple(row) for row in (await connection.execute(query, values)).all()]


async def produced_endings(game: str | AsyncEngine) -> list[Ending]:
    """The endings the game database (URL or engine) recorded in its outbox (sent or still
    to send)."""
    rows = await _rows(game, _PRODUCED, ce_type=GAME_ENDED)
    endings = (ending_of(event_id, bytes(payload)) for event_id, payload in rows)
    return [ending for ending in endings if ending is not None]


async def wallet_settlements(wallet: str | AsyncEngine) -> dict[str, Settled]:
    rows = await _rows(wallet, _SETTLED, tables=f"{TABLE_PREFIX}%")
    return {
        str(game): Settled(int(records), int(ok), bool(real)) for game, records, ok, real in rows
    }


async def published_endings(bootstrap: str) -> list[Ending]:
    """Every ``GameEnded`` of a chaos table on the broker, each delivery once."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    try:
        numbers = sorted(consumer.partitions_for_topic(GAME_TOPIC) or ())
        partitions = [TopicPartition(GAME_TOPIC, number) for number in numbers]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        endings: list[Ending] = []
        while [tp for tp in partitions if await consumer.position(tp) < ends[tp]]:
            batches = await consumer.getmany(*partitions, timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    headers = {key: value.decode() for key, value in record.headers}
                    if headers.get("ce_type") == GAME_ENDED and record.value is not None:
                        ending = ending_of(headers.get("ce_id", ""), record.value)
                        if ending is not None:
                            endings.append(ending)
        return endings
    finally:
        await consumer.stop()


@dataclass(frozen=True)
class Records:
    produced: list[Ending]
    published: list[Ending]
    settled: dict[str, Settled]


async def read_records(
    game: str | AsyncEngine, bootstrap: str, wallet: str | AsyncEngine
) -> Records:
    produced = await produced_endings(game)  # first: whatever it lists had time to travel
    settled = await wallet_settlements(wallet)
    return Records(produced, await published_endings(bootstrap), settled)


async def settle_check(
    game_url: str, bootstrap: str, wallet_url: str, within: float
) -> tuple[Verdict, Records]:
    """The verdict on every game ended so far, once all of them reached the wallet or
    ``within`` seconds have passed (events still in transit are not lost yet)."""
    async with database(game_url) as game, database(wallet_url) as wallet:
        first = await read_records(game, bootstrap, wallet)
        judged = {ending.settlement_id for ending in first.produced}
        give_up = time.monotonic() + within
        while True:
            records = await read_records(game, bootstrap, wallet)
            verdict = judge(records.produced, records.published, records.settled, judged)
            if verdict.lost == 0 or time.monotonic() > give_up:
                return verdict, records
            await asyncio.sleep(0.5)


async def audit_now(wallet_url: str) -> str:
    """The audit ``tavla wallet audit`` runs, in this process (a fraction of the command's
    start-up time, which matters between faults): "ok", or the breaches as it prints them."""
    from services.wallet.audit_cli import audit_database

    breaches = await audit_database(wallet_url)
    if not breaches:
        return AUDIT_OK
    return "\n".join(f"{breach.name}: {breach.subject}: {breach.detail}" for breach in breaches)


def audit_command(wallet_url: str) -> str:
    """``tavla wallet audit`` on the wallet's database: "ok", or what it reported."""
    env = {**os.environ, "TAVLA_DATABASE_URL": wallet_url}
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "wallet", "audit"],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=120, check=False,
    )  # fmt: skip
    if result.returncode == 0:
        return AUDIT_OK
    return (result.stdout + result.stderr).strip() or f"exit status {result.returncode}"
