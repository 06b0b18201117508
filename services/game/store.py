"""Game tables and repositories (SQLAlchemy Core) and the game unit of work.

- ``games``: one row per session, its state as JSON, the optimistic-concurrency
  ``version``, the secret dice seed of the current game, and presence columns.
- ``game_actions``: the append-only action log, one row per version: the command
  that made it (enough to replay the session), a hash of it for idempotent
  retries, the event type and the Game view that call answered with.
- ``dice_seeds``: each finished game's revealed seed and roll count.
- ``timers``: clock and reconnect deadlines, claimed with ``FOR UPDATE SKIP LOCKED``
  together with their game row, so one replica fires each exactly once.

Each seat's last location check of a real-money game (``geo_address<n>``,
``geo_residence<n>``, ``geo_checked<n>``, migration 0003) lives beside the state,
outside the version, and is read with it (:attr:`~services.game.domain.Session.located`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    and_,
    delete,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import JSONB, insert
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from services.game.domain import Located
from services.kit.db import UnitOfWork
from services.kit.errors import Unavailable

metadata = MetaData()

# The NOTIFY channel of a game's changes (payload: the game id), delivered at commit to
# every replica's listener, which wakes its WatchGame streams of that game.
CHANGES_CHANNEL = "game_changed"
_NOTIFY_CHANGES = text(
    f"SELECT pg_notify('{CHANGES_CHANNEL}', g) FROM unnest(CAST(:games AS text[])) AS g"
)

games = Table(
    "games",
    metadata,
    Column("game_id", String(64), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("status", String(20), nullable=False),
    Column("account0", String(64), nullable=False, index=True),
    Column("account1", String(64), nullable=False, index=True),
    Column("state", JSONB, nullable=False),
    # The current game's server seed: secret until that game ends.
    Column("seed", LargeBinary, nullable=False),
    Column("seen0", DateTime(timezone=True), nullable=False),
    Column("seen1", DateTime(timezone=True), nullable=False),
    Column("away0", Boolean, nullable=False),
    Column("away1", Boolean, nullable=False),
    Column("idempotency_key", String(200), unique=True),
    # Each seat's last location check (real money only; migration 0003).
    Column("geo_address0", String(64)),
    Column("geo_residence0", String(16)),
    Column("geo_checked0", DateTime(timezone=True)),
    Column("geo_address1", String(64)),
    Column("geo_residence1", String(16)),
    Column("geo_checked1", DateTime(timezone=True)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
Index("games_in_progress", games.c.updated_at, postgresql_where=games.c.status == "in_progress")

game_actions = Table(
    "game_actions",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("account_id", String(64), nullable=False),  # "" for the service's own commands
    Column("command", JSONB, nullable=False),
    Column("command_hash", String(64), nullable=False),
    Column("event_type", String(100), nullable=False),
    Column("view", LargeBinary, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("game_id", "version"),
)

dice_seeds = Table(
    "dice_seeds",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("game_number", Integer, nullable=False),
    Column("commitment", String(64), nullable=False),
    Column("server_seed", LargeBinary, nullable=False),
    Column("client_seed", String(200), nullable=False),
    Column("roll_count", Integer, nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("game_id", "game_number"),
)

timers = Table(
    "timers",
    metadata,
    Column("game_id", String(64), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("due_at", DateTime(timezone=True), nullable=False, index=True),
    PrimaryKeyConstraint("game_id", "kind"),
)


@dataclass(frozen=True)
class GameRow:
    game_id: str
    version: int
    status: str
    state: dict[str, Any]
    seed: bytes
    updated_at: datetime
    seen: tuple[datetime, datetime]
    located: tuple[Located | None, Located | None] = (None, None)


LOCATION_COLUMNS = (
    "geo_address0", "geo_residence0", "geo_checked0",
    "geo_address1", "geo_residence1", "geo_checked1",
)  # fmt: skip

_ROW_COLUMNS = (
    games.c.game_id,
    games.c.version,
    games.c.status,
    games.c.state,
    games.c.seed,
    games.c.updated_at,
    games.c.seen0,
    games.c.seen1,
    *(games.c[name] for name in LOCATION_COLUMNS),
)


def located_of(row: Any) -> tuple[Located | None, Located | None]:
    """Each seat's last location check from a games row (None: never checked)."""

    def seat(n: int) -> Located | None:
        checked = row[f"geo_checked{n}"]
        if checked is None:
            return None
        return Located(row[f"geo_address{n}"], row[f"geo_residence{n}"], checked)

    return seat(0), seat(1)


def _game_row(row: Any) -> GameRow:
    return GameRow(
        row.game_id,
        row.version,
        row.status,
        row.state,
        row.seed,
        row.updated_at,
        (row.seen0, row.seen1),
        located_of(row._mapping),
    )


@dataclass(frozen=True)
class SavedGame:
    """What a save writes to the games row, besides the state."""

    game_id: str
    version: int
    status: str
    state: dict[str, Any]
    seed: bytes
    away: tuple[bool, bool]
    updated_at: datetime


class GameRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(
        self,
        saved: SavedGame,
        table_id: str,
        accounts: tuple[str, str],
        idempotency_key: str | None,
    ) -> None:
        await self._session.execute(
            games.insert().values(
                game_id=saved.game_id,
                table_id=table_id,
                version=saved.version,
                status=saved.status,
                account0=accounts[0],
                account1=accounts[1],
                state=saved.state,
                seed=saved.seed,
                seen0=saved.updated_at,
                seen1=saved.updated_at,
                away0=saved.away[0],
                away1=saved.away[1],
                idempotency_key=idempotency_key,
                created_at=saved.updated_at,
                updated_at=saved.updated_at,
            )
        )

    async def get(
        self, game_id: str, *, lock: bool = False, skip_locked: bool = False
    ) -> GameRow | None:
        query = select(*_ROW_COLUMNS).where(games.c.game_id == game_id)
        if lock:
            query = query.with_for_update(skip_locked=skip_locked)
        row = (await self._session.execute(query)).first()
        return None if row is None else _game_row(row)

    async def by_idempotency_key(self, key: str) -> str | None:
        query = select(games.c.game_id).where(games.c.idempotency_key == key)
        found: str | None = (await self._session.execute(query)).scalar()
        return found

    async def save(self, saved: SavedGame, expected_version: int, seen: int | None) -> bool:
        """Write the new state if the row is still at ``expected_version``; ``seen``: the actor."""
        values: dict[str, Any] = {
            "version": saved.version,
            "status": saved.status,
            "state": saved.state,
            "seed": saved.seed,
            "away0": saved.away[0],
            "away1": saved.away[1],
            "updated_at": saved.updated_at,
        }
        if seen is not None:
            values[f"seen{seen}"] = saved.updated_at
        result = await self._session.execute(
            update(games)
            .where(games.c.game_id == saved.game_id, games.c.version == expected_version)
            .values(values)
        )
        return bool(result.rowcount)  # type: ignore[attr-defined]

    async def record_location(self, game_id: str, player: int, located: Located) -> None:
        """A seat's location check: never moves the version (see the module docstring)."""
        await self._session.execute(
            update(games)
            .where(games.c.game_id == game_id)
            .values(
                {
                    f"geo_address{player}": located.address,
                    f"geo_residence{player}": located.residence,
                    f"geo_checked{player}": located.checked_at,
                }
            )
        )

    async def locations_due(self, cutoff: datetime, limit: int) -> list[tuple[str, int]]:
        """(game id, player) of connected seats in games in progress last located before
        ``cutoff`` (only real-money games are ever located)."""
        query = (
            select(
                games.c.game_id, games.c.geo_checked0, games.c.geo_checked1,
                games.c.away0, games.c.away1,
            )
            .where(
                games.c.status == "in_progress",
                or_(
                    and_(games.c.geo_checked0 < cutoff, games.c.away0.is_(False)),
                    and_(games.c.geo_checked1 < cutoff, games.c.away1.is_(False)),
                ),
            )
            .order_by(games.c.updated_at)
            .limit(limit)
        )  # fmt: skip
        found: list[tuple[str, int]] = []
        for row in (await self._session.execute(query)).all():
            for player, checked, away in ((0, row.geo_checked0, row.away0),
                                          (1, row.geo_checked1, row.away1)):  # fmt: skip
                if checked is not None and checked < cutoff and not away:
                    found.append((row.game_id, player))
        return found

    async def silent_players(self, cutoff: datetime, limit: int) -> list[tuple[str, int]]:
        """(game id, player) of connected players in games in progress not seen since ``cutoff``."""
        query = (
            select(games.c.game_id, games.c.seen0, games.c.seen1, games.c.away0, games.c.away1)
            .where(
                games.c.status == "in_progress",
                or_(
                    and_(games.c.seen0 < cutoff, games.c.away0.is_(False)),
                    and_(games.c.seen1 < cutoff, games.c.away1.is_(False)),
                ),
            )
            .limit(limit)
        )
        found: list[tuple[str, int]] = []
        for row in (await self._session.execute(query)).all():
            if row.seen0 < cutoff and not row.away0:
                found.append((row.game_id, 0))
            if row.seen1 < cutoff and not row.away1:
                found.append((row.game_id, 1))
        return found

    async def list_for(
        self, account_id: str, in_progress_only: bool, limit: int, before: datetime | None
    ) -> list[GameRow]:
        query = select(*_ROW_COLUMNS).where(
            or_(games.c.account0 == account_id, games.c.account1 == account_id)
        )
        if in_progress_only:
            query = query.where(games.c.status == "in_progress")
        if before is not None:
            query = query.where(games.c.updated_at < before)
        query = query.order_by(games.c.updated_at.desc()).limit(limit)
        return [_game_row(row) for row in (await self._session.execute(query)).all()]


@dataclass(frozen=True)
class ActionRow:
    version: int
    account_id: str
    command: dict[str, Any]
    command_hash: str
    event_type: str
    view: bytes
    occurred_at: datetime


class ActionLog:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def append(self, game_id: str, row: ActionRow) -> None:
        await self._session.execute(
            game_actions.insert().values(
                game_id=game_id,
                version=row.version,
                account_id=row.account_id,
                command=row.command,
                command_hash=row.command_hash,
                event_type=row.event_type,
                view=row.view,
                occurred_at=row.occurred_at,
            )
        )

    async def at(self, game_id: str, version: int) -> ActionRow | None:
        rows = await self._select(game_id, game_actions.c.version == version)
        return rows[0] if rows else None

    async def after(self, game_id: str, version: int) -> list[ActionRow]:
        return await self._select(game_id, game_actions.c.version > version)

    async def _select(self, game_id: str, condition: Any) -> list[ActionRow]:
        query = (
            select(game_actions)
            .where(game_actions.c.game_id == game_id, condition)
            .order_by(game_actions.c.version)
        )
        return [
            ActionRow(
                r.version,
                r.account_id,
                r.command,
                r.command_hash,
                r.event_type,
                r.view,
                r.occurred_at,
            )
            for r in (await self._session.execute(query)).all()
        ]


@dataclass(frozen=True)
class SeedRow:
    game_number: int
    commitment: str
    server_seed: bytes
    client_seed: str
    roll_count: int
    finished_at: datetime


class SeedRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, game_id: str, rows: Sequence[SeedRow]) -> None:
        await self._session.execute(
            dice_seeds.insert(),
            [
                {
                    "game_id": game_id,
                    "game_number": r.game_number,
                    "commitment": r.commitment,
                    "server_seed": r.server_seed,
                    "client_seed": r.client_seed,
                    "roll_count": r.roll_count,
                    "finished_at": r.finished_at,
                }
                for r in rows
            ],
        )

    async def of(self, game_id: str) -> list[SeedRow]:
        query = (
            select(dice_seeds)
            .where(dice_seeds.c.game_id == game_id)
            .order_by(dice_seeds.c.game_number)
        )
        return [
            SeedRow(
                r.game_number,
                r.commitment,
                r.server_seed,
                r.client_seed,
                r.roll_count,
                r.finished_at,
            )
            for r in (await self._session.execute(query)).all()
        ]


class TimerRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def set(self, game_id: str, kind: str, due_at: datetime) -> None:
        statement = insert(timers).values(game_id=game_id, kind=kind, due_at=due_at)
        await self._session.execute(
            statement.on_conflict_do_update(
                index_elements=[timers.c.game_id, timers.c.kind], set_={"due_at": due_at}
            )
        )

    async def clear(self, game_id: str, kinds: Sequence[str] | None = None) -> None:
        statement = delete(timers).where(timers.c.game_id == game_id)
        if kinds is not None:
            statement = statement.where(timers.c.kind.in_(kinds))
        await self._session.execute(statement)

    async def claim_due(self, now: datetime) -> tuple[str, str] | None:
        """One due timer, locked with its game row; rows another replica holds are skipped."""
        query = (
            select(timers.c.game_id, timers.c.kind)
            .join(games, games.c.game_id == timers.c.game_id)
            .where(timers.c.due_at <= now)
            .order_by(timers.c.due_at)
            .limit(1)
            .with_for_update(skip_locked=True)
        )
        row = (await self._session.execute(query)).first()
        return None if row is None else (row.game_id, row.kind)


def _is_outage(error: BaseException | None) -> bool:
    if isinstance(error, DBAPIError):
        return error.connection_invalidated or isinstance(error, OperationalError | InterfaceError)
    return isinstance(error, OSError)


class GameUnitOfWork(UnitOfWork):
    games: GameRepository
    actions: ActionLog
    seeds: SeedRepository
    timers: TimerRepository
    _changed: set[str]

    def changed(self, game_id: str) -> None:
        """Wake the game's watchers on every replica when (and only if) this commits."""
        self._changed.add(game_id)

    async def commit(self) -> None:
        if self._changed:
            await self.session.execute(_NOTIFY_CHANGES, {"games": sorted(self._changed)})
            self._changed = set()
        await super().commit()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            await super().__aexit__(exc_type, exc, traceback)
        finally:
            # A lost database is UNAVAILABLE (retry with the same version), not INTERNAL.
            if _is_outage(exc):
                raise Unavailable("the game store cannot be reached; retry") from exc

    def _start(self) -> None:
        self._changed = set()
        self.games = GameRepository(self.session)
        self.actions = ActionLog(self.session)
        self.seeds = SeedRepository(self.session)
        self.timers = TimerRepository(self.session)
