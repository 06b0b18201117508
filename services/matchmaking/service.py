"""Lobby use cases: open, list, look at, join, leave and close tables.

Each opens a unit of work, applies the table domain and records the table's
facts in the outbox with it. Joining is the seating (:mod:`services.matchmaking.seating`).
Listing asks the wallet, with the listing player's own access token, what each
table would cost them in commission with both ratings.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy.exc import IntegrityError

from services.kit.clock import Clock
from services.kit.errors import AlreadyExists, InvalidArgument, NotFound
from services.matchmaking import messages
from services.matchmaking.domain.tables import Kind, RatingRange, Rules, Sitter, Status, Table
from services.matchmaking.ports import Quote, RatingSource, WalletPort
from services.matchmaking.seating import Seating
from services.matchmaking.store import MatchmakingUnitOfWork, TableFilter
from tavla.wallet.v1 import wallet_pb2

MAX_PAGE = 100
DEFAULT_PAGE = 50
_NAMESPACE = uuid.UUID("5b3f0c6e-2a51-4f0e-9a43-6c1f3c9f7d10")


@dataclass(frozen=True)
class Listed:
    table: Table
    commission: wallet_pb2.CommissionQuote | None


@dataclass(frozen=True)
class Page:
    tables: list[Listed]
    next_token: str


class LobbyService:
    def __init__(
        self,
        unit_of_work: Callable[[], MatchmakingUnitOfWork],
        *,
        seating: Seating,
        wallet: WalletPort,
        ratings: RatingSource,
        clock: Clock,
    ) -> None:
        self._uow = unit_of_work
        self._seating = seating
        self._wallet = wallet
        self._ratings = ratings
        self._clock = clock

    async def create_table(
        self,
        *,
        owner: Sitter,
        rules: Rules,
        idempotency_key: str,
        rating_range: RatingRange,
        invited_account_id: str,
    ) -> Table:
        if not idempotency_key or len(idempotency_key) > 200:
            raise InvalidArgument("idempotency_key is required (at most 200 characters)")
        async with self._uow() as uow:
            existing = await uow.tables.by_key(owner.account_id, idempotency_key)
        if existing is not None:
            return _same_request(existing, rules, idempotency_key)
        await self._seating.may_sit(owner, rules)
        rating = (await self._ratings.ratings([owner.account_id]))[owner.account_id].rating
        now = self._clock.now()
        table_id = str(uuid.uuid5(_NAMESPACE, f"{owner.account_id}:{idempotency_key}"))
        table = Table.open(
            table_id=table_id,
            owner=owner,
            owner_rating=rating,
            rules=rules,
            now=now,
            rating_range=rating_range,
            invited_account_id=invited_account_id,
        )
        try:
            async with self._uow() as uow:
                await uow.tables.add(table, idempotency_key, now)
                uow.publish(messages.TOPIC, table_id, messages.table_opened(table))
                uow.publish(messages.TOPIC, table_id, messages.player_seated(table, 0, now))
                await uow.commit()
        except IntegrityError:  # the same request committed first
            async with self._uow() as uow:
                found = await uow.tables.by_key(owner.account_id, idempotency_key)
            if found is None:
                raise
            return _same_request(found, rules, idempotency_key)
        return table

    async def join_table(self, *, table_id: str, joiner: Sitter) -> Table:
        _require_id(table_id)
        return await self._seating.join(table_id, joiner)

    async def get_table(self, table_id: str, viewer: str) -> Table:
        _require_id(table_id)
        async with self._uow() as uow:
            table = await uow.tables.get(table_id)
        if table is None or not table.visible_to(viewer):
            raise NotFound(f"no table {table_id}")
        return table

    async def leave_table(self, *, table_id: str, account_id: str) -> Table:
        if await self._plays_table_stakes(table_id, account_id):
            return await self._leave_table_stakes(table_id, account_id)
        return await self._owner_closes(table_id, account_id, "leave", "its owner left")

    async def _plays_table_stakes(self, table_id: str, account_id: str) -> bool:
        _require_id(table_id)
        async with self._uow() as uow:
            table = await uow.tables.get(table_id)
        return (
            table is not None
            and table.rules.table_stakes
            and table.status is Status.PLAYING
            and table.seated(account_id)
        )

    async def _leave_table_stakes(self, table_id: str, account_id: str) -> Table:
        """Either player leaves a table-stakes session between games: no further game
        starts; once the game in play is settled the holds are released and the table
        closes (services/matchmaking/table_stakes.py)."""
        now = self._clock.now()
        async with self._uow() as uow:
            table = await uow.tables.get(table_id, lock=True)
            if table is None:
                raise NotFound(f"no table {table_id}")
            leaving = table.leave_after_game(account_id)
            if leaving != table:
                await uow.tables.save(leaving, now)
                left = messages.player_left(leaving, account_id, now)
                uow.publish(messages.TOPIC, table_id, left)
                await uow.commit()
        return leaving

    async def close_table(self, *, table_id: str, account_id: str) -> Table:
        return await self._owner_closes(table_id, account_id, "close", "closed by its owner")

    async def _owner_closes(self, table_id: str, account_id: str, doing: str, reason: str) -> Table:
        _require_id(table_id)
        now = self._clock.now()
        async with self._uow() as uow:
            table = await uow.tables.get(table_id, lock=True)
            if table is None or not table.visible_to(account_id):
                raise NotFound(f"no table {table_id}")
            table.check_owner_action(account_id, doing)
            closed = table.closed(reason)
            await uow.tables.save(closed, now)
            if doing == "leave":
                uow.publish(messages.TOPIC, table_id, messages.player_left(closed, account_id, now))
            uow.publish(messages.TOPIC, table_id, messages.table_closed(closed, now))
            await uow.commit()
        return closed

    async def list_tables(
        self, wanted: TableFilter, page_size: int, page_token: str, authorization: str
    ) -> Page:
        if page_size < 0:
            raise InvalidArgument("page_size cannot be negative")
        limit = min(page_size or DEFAULT_PAGE, MAX_PAGE)
        viewer = (await self._ratings.ratings([wanted.viewer_id]))[wanted.viewer_id]
        query = replace(
            wanted, viewer_rating=viewer.rating, limit=limit, after=_cursor(page_token)
        )
        async with self._uow() as uow:
            tables = await uow.tables.listing(query)
        owners = await self._ratings.ratings(sorted({t.owner_id for t in tables}))
        priced = {
            t.table_id: _quote_of(t, viewer.rating, owners[t.owner_id].rating) for t in tables
        }
        quotes = await self._quotes(set(priced.values()), authorization)
        listed = [Listed(t, quotes[priced[t.table_id]]) for t in tables]
        token = _token(tables[-1]) if len(tables) == limit else ""
        return Page(listed, token)

    async def _quotes(
        self, wanted: set[Quote], authorization: str
    ) -> dict[Quote, wallet_pb2.CommissionQuote | None]:
        """One wallet quote per distinct (rules, ratings) on the page, asked concurrently."""
        asked = list(wanted)
        answers = await asyncio.gather(*(self._wallet.quote(q, authorization) for q in asked))
        return dict(zip(asked, answers, strict=True))


def _quote_of(table: Table, viewer_rating: float, owner_rating: float) -> Quote:
    return quote_for(table.rules, (viewer_rating, owner_rating))


def quote_for(rules: Rules, ratings: tuple[float, float]) -> Quote:
    """The wallet quote at cube 1 under ``rules``, the player's own rating first."""
    match = rules.kind is Kind.MATCH
    return Quote(
        kind=wallet_pb2.SETTLEMENT_KIND_SERIES if match else wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME,
        stake_minor=rules.stake_minor,
        currency=rules.currency,
        match_length=rules.match_length,
        ratings=ratings,
    )


def _same_request(table: Table, rules: Rules, key: str) -> Table:
    if table.rules != rules:
        raise AlreadyExists(
            f"idempotency key {key!r} already opened table {table.table_id} with other rules; "
            "use a new key for a new table"
        )
    return table


def _require_id(table_id: str) -> None:
    if not table_id or len(table_id) > 36:
        raise InvalidArgument("table_id is required: the id ListTables or CreateTable gave")


def _token(table: Table) -> str:
    return f"{table.created_at.isoformat()}|{table.table_id}"


def _cursor(token: str) -> tuple[datetime, str] | None:
    if not token:
        return None
    moment, _, table_id = token.partition("|")
    try:
        return datetime.fromisoformat(moment), table_id
    except ValueError:
        raise InvalidArgument(
            "page_token is not one this service gave; start again without it"
        ) from None
