"""``tavla events parked | replay | discard``: the events a service's consumers set aside.

A consumer parks an event it could not apply (:mod:`services.kit.events.consumer`)
in the ``parked_events`` table of its service's database. These commands work on
that database (``TAVLA_DATABASE_URL``, or ``--database-url``), as ``tavla wallet
reconcile`` does:

- ``tavla events parked [--consumer C] [--all]`` prints the open parked events (with
  ``--all`` the replayed and discarded ones too), one JSON object a line: ``id``,
  ``consumer``, ``topic``, ``partition``, ``offset``, ``key``, ``event_id``,
  ``ce_type``, ``reason``, ``error``, ``attempts``, ``parked_at``,
  ``replay_requested_at``, ``resolved_at``, ``resolution``;
- ``tavla events replay (--id N ... | --consumer C --all)`` asks the running service to
  apply them again once the cause is fixed: its consumer picks the request up within
  seconds, verifies and applies each in the order it was parked (a key's later events
  after its earlier ones), and marks it ``replayed``; one that fails again stays
  parked with its new error;
- ``tavla events discard --id N ...`` closes parks that must never be applied (a
  forged event: reason ``signature``), marked ``discarded``; their key, if they held
  it back, goes on once nothing earlier of it is open. The outbox relay's parks
  (consumer ``<service>.relay``, reason ``unpublishable``: a record the broker refuses
  for itself) are listed too; no consumer ever saw them, so they are not replayed:
  what they carried is redone by hand, then they are discarded.

Exit status 2 with a one-line message when the database cannot be read or the
arguments name nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, select, true, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.kit.clock import Clock, SystemClock
from services.kit.env import ConfigError, Env
from services.kit.events.tables import parked_event_row

if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

USAGE_ERROR = 2
SHOWN = (
    "id",
    "consumer",
    "topic",
    "partition",
    "offset",
    "key",
    "event_id",
    "ce_type",
    "reason",
    "error",
    "attempts",
    "parked_at",
    "replay_requested_at",
    "resolved_at",
    "resolution",
)


def register(commands: Subparsers) -> None:
    """Adds ``parked``, ``replay`` and ``discard`` to ``tavla events``."""
    parked = commands.add_parser(
        "parked",
        help="list the events the service's consumers parked (TAVLA_DATABASE_URL), as JSON lines",
    )
    parked.add_argument("--consumer", default="", help="one consumer, e.g. wallet.settlement")
    parked.add_argument("--all", action="store_true", help="also those replayed or discarded")
    _database_option(parked)
    parked.set_defaults(handler=_list)

    replay = commands.add_parser(
        "replay", help="ask the running service to apply parked events again, in order"
    )
    _selection(replay)
    replay.set_defaults(handler=_replay)

    discard = commands.add_parser(
        "discard", help="close parked events that must never be applied (forged ones)"
    )
    discard.add_argument("--id", type=int, action="append", default=[], required=True)
    _database_option(discard)
    discard.set_defaults(handler=_discard)


def _database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--database-url", default="", help="default: TAVLA_DATABASE_URL")


def _selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--id", type=int, action="append", default=[], help="repeatable")
    parser.add_argument("--consumer", default="", help="with --all: every open park of it")
    parser.add_argument("--all", action="store_true", help="every open park (of --consumer)")
    _database_option(parser)


def _list(args: argparse.Namespace) -> int:
    return _run("parked", args, lambda engine: list_parked(engine, args.consumer, args.all))


def _replay(args: argparse.Namespace) -> int:
    if not args.id and not args.all:
        print("tavla events replay: name parked events with --id, or --all", file=sys.stderr)
        return USAGE_ERROR
    return _run(
        "replay", args, lambda engine: request_replay(engine, args.id, args.consumer, args.all)
    )


def _discard(args: argparse.Namespace) -> int:
    return _run("discard", args, lambda engine: discard(engine, args.id))


def _run(command: str, args: argparse.Namespace, work: Any) -> int:
    try:
        url = args.database_url or Env().text("TAVLA_DATABASE_URL")
    except ConfigError as error:
        print(f"tavla events {command}: {error}", file=sys.stderr)
        return USAGE_ERROR

    async def run() -> Any:
        engine = create_async_engine(url, pool_size=1, max_overflow=0)
        try:
            return await work(engine)
        finally:
            await engine.dispose()

    try:
        result = asyncio.run(run())
    except (OSError, SQLAlchemyError) as error:
        print(f"tavla events {command}: cannot read the database: {error}", file=sys.stderr)
        return USAGE_ERROR
    if isinstance(result, list):
        for row in result:
            print(json.dumps(row, sort_keys=True))
    else:
        print(json.dumps(result, sort_keys=True))
    return 0


async def list_parked(
    engine: AsyncEngine, consumer: str = "", everything: bool = False
) -> list[dict[str, Any]]:
    """The parked events, oldest first, as JSON-ready dictionaries."""
    conditions: list[ColumnElement[bool]] = []
    if consumer:
        conditions.append(parked_event_row.c.consumer == consumer)
    if not everything:
        conditions.append(parked_event_row.c.resolved_at.is_(None))
    statement = select(*(parked_event_row.c[name] for name in SHOWN)).order_by(
        parked_event_row.c.id
    )
    if conditions:
        statement = statement.where(*conditions)
    async with engine.connect() as connection:
        rows = (await connection.execute(statement)).all()
    return [{name: _plain(value) for name, value in row._mapping.items()} for row in rows]


async def request_replay(
    engine: AsyncEngine,
    ids: Sequence[int],
    consumer: str = "",
    everything: bool = False,
    clock: Clock | None = None,
) -> dict[str, int]:
    """Mark open parks for replay: those of ``ids``, or all (of ``consumer``)."""
    chosen: ColumnElement[bool] = parked_event_row.c.id.in_(ids) if ids else true()
    if consumer:
        chosen = chosen & (parked_event_row.c.consumer == consumer)
    if not ids and not everything:
        raise ValueError("name parked events, or all of them")
    now = (clock or SystemClock()).now()
    async with engine.begin() as connection:
        result = await connection.execute(
            update(parked_event_row)
            # An unpublished outbox row (partition -1) has no consumer to replay it.
            .where(
                chosen,
                parked_event_row.c.resolved_at.is_(None),
                parked_event_row.c.partition >= 0,
            )
            .values(replay_requested_at=now)
        )
    return {"replay_requested": result.rowcount}


async def discard(
    engine: AsyncEngine, ids: Sequence[int], clock: Clock | None = None
) -> dict[str, int]:
    """Close open parks that must never be applied."""
    now = (clock or SystemClock()).now()
    async with engine.begin() as connection:
        result = await connection.execute(
            update(parked_event_row)
            .where(parked_event_row.c.id.in_(ids), parked_event_row.c.resolved_at.is_(None))
            .values(resolved_at=now, resolution="discarded", replay_requested_at=None)
        )
    return {"discarded": result.rowcount}


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
