"""The wallet's tables and repositories (SQLAlchemy Core; rows <-> domain objects).

Concurrency: every operation that moves money locks the rows it touches with
``SELECT ... FOR UPDATE`` in one fixed order: holds (sorted by id), then player
accounts (sorted by id); system accounts (house, clearing, held stakes) are never
locked up front but updated by delta after the players, sorted by id. Every
transaction therefore takes its locks in the same global order, so concurrent
operations on the same accounts serialise without deadlocking. A system
account's balance is spread over shard rows (migration 0003) so that every
settlement crediting the house does not queue on one row lock.
The domain checks balances; a CHECK constraint backs it up in the database.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from google.protobuf.message import Message
from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    and_,
    func,
    select,
    text,
    update,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.clock import Clock
from services.kit.db import UnitOfWork
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.wallet.domain.audit import AuditSnapshot
from services.wallet.domain.holds import Hold, HoldStatus
from services.wallet.domain.ledger import (
    Account,
    AccountKind,
    Balance,
    Entry,
    Ledger,
    Posting,
    Transfer,
    TransferCode,
    entries_of,
    player_account,
)
from services.wallet.domain.limits import (
    Deposit,
    LimitPeriod,
    PendingIncrease,
    PlayerLimits,
    SelfExclusion,
)
from services.wallet.domain.money import Money
from services.wallet.domain.payments import Payment, PaymentKind, PaymentStatus

metadata = MetaData()
_TS = DateTime(timezone=True)

ledger_accounts = Table(
    "ledger_accounts",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("owner", String(100)),
    Column("debits", BigInteger, nullable=False),
    Column("credits", BigInteger, nullable=False),
    Column("version", BigInteger, nullable=False),
    Column("created_at", _TS),
)

transfers = Table(
    "transfers",
    metadata,
    Column("id", String(300), primary_key=True),
    Column("debit_account_id", String(200), nullable=False),
    Column("credit_account_id", String(200), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
    Column("code", SmallInteger, nullable=False),
    Column("reference", String(300), nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("posted_at", _TS, nullable=False),
)

entries = Table(
    "entries",
    metadata,
    Column("transfer_id", String(300), primary_key=True),
    Column("account_id", String(200), primary_key=True),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(8), nullable=False),
)

holds = Table(
    "holds",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("player_id", String(100), nullable=False),
    Column("table_id", String(100), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("game_id", String(100)),
    Column("idempotency_key", String(200), nullable=False),
    Column("release_reason", String(300)),
    Column("created_at", _TS, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

payments = Table(
    "payments",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("method", String(200), nullable=False),
    Column("provider", String(50), nullable=False),
    Column("provider_reference", String(200)),
    Column("failure_reason", String(500)),
    Column("idempotency_key", String(200), nullable=False),
    Column("created_at", _TS, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

players = Table(
    "players",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("frozen_reason", String(500)),
    Column("frozen_alert_id", String(100)),
    Column("self_excluded_from", _TS),
    Column("self_excluded_until", _TS),
    Column("self_excluded_indefinitely", Boolean, nullable=False),
    Column("updated_at", _TS, nullable=False),
)

deposit_limits = Table(
    "deposit_limits",
    metadata,
    Column("player_id", String(100), primary_key=True),
    Column("currency", String(8), primary_key=True),
    Column("period", String(8), primary_key=True),
    Column("amount", BigInteger),
    Column("pending_amount", BigInteger),
    Column("pending_effective_at", _TS),
    Column("updated_at", _TS, nullable=False),
)

settlements = Table(
    "settlements",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("game_id", String(100), nullable=False),
    Column("game_number", Integer, nullable=False),
    Column("table_id", String(100), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("currency", String(8), nullable=False),
    Column("winner_id", String(100)),
    Column("loser_id", String(100)),
    Column("win_sum", BigInteger, nullable=False),
    Column("commission_total", BigInteger, nullable=False),
    Column("rate", String(40), nullable=False),
    Column("schedule_version", String(100), nullable=False),
    Column("disconnection", Boolean, nullable=False),
    Column("status", String(16), nullable=False),
    Column("detail", String(1000)),
    Column("source_event_id", String(64), nullable=False),
    Column("settled_at", _TS, nullable=False),
)


# --------------------------------------------------------------------------- ledger


def content_hash(transfer: Transfer) -> str:
    """A fingerprint of what a transfer says, stored beside it for exports and spot checks."""
    text = "|".join(
        (
            transfer.id,
            transfer.debit_account_id,
            transfer.credit_account_id,
            str(transfer.amount.amount),
            transfer.amount.currency,
            str(int(transfer.code)),
            transfer.reference,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _account(row: Any) -> Account:
    return Account(row.id, AccountKind(row.kind), row.currency, row.owner)


def _balance(row: Any) -> Balance:
    return Balance(row.id, row.currency, row.debits, row.credits)


def _transfer(row: Any) -> Transfer:
    return Transfer(
        id=row.id,
        debit_account_id=row.debit_account_id,
        credit_account_id=row.credit_account_id,
        amount=Money(row.amount, row.currency),
        code=TransferCode(row.code),
        reference=row.reference,
    )


def is_player_account_id(account_id: str) -> bool:
    return account_id.startswith(f"{AccountKind.PLAYER.value}:")


class LedgerRepository:
    """Accounts, balances and transfers: the slice of the ledger one operation needs."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def open_player_accounts(self, player_id: str, currencies: Iterable[str]) -> None:
        """Create the player's accounts in these currencies unless they exist."""
        rows = [
            {"id": a.id, "kind": a.kind.value, "currency": a.currency, "owner": a.owner}
            for a in (player_account(player_id, currency) for currency in sorted(set(currencies)))
        ]
        await self._session.execute(insert(ledger_accounts).values(rows).on_conflict_do_nothing())

    async def load(self, account_ids: Iterable[str], transfer_ids: Iterable[str] = ()) -> Ledger:
        """Lock the player accounts (sorted), read the system ones, and the known transfers.

        Accounts that do not exist are simply absent: the domain names them.
        One round trip reads the accounts: the locking read runs as a CTE.
        """
        ids = set(account_ids)
        player_ids = sorted(i for i in ids if is_player_account_id(i))
        system_ids = sorted(ids - set(player_ids))
        rows = await _LOAD_ACCOUNTS.execute(
            self._session, {"players": player_ids, "system": system_ids}
        )
        known = await self.transfers_by_id(transfer_ids)
        return Ledger(
            accounts={row.id: _account(row) for row in rows},
            balances={row.id: _balance(row) for row in rows},
            transfers=known,
        )

    async def transfers_by_id(self, transfer_ids: Iterable[str]) -> dict[str, Transfer]:
        ids = sorted(set(transfer_ids))
        if not ids:
            return {}
        query = select(transfers).where(transfers.c.id.in_(ids))
        return {row.id: _transfer(row) for row in (await self._session.execute(query)).all()}

    async def save(self, before: Ledger, posting: Posting, now: datetime) -> None:
        """Write the applied transfers, their entries and the balance changes.

        One statement writes the transfers, the entries, the player balances
        (already locked by :meth:`load`) and the first system account's shard;
        any further system account follows in id order, so the locks of every
        transaction are taken in the same order and cannot deadlock.
        """
        if not posting.applied:
            return
        deltas = _deltas(before, posting)
        players = sorted(i for i in deltas if is_player_account_id(i))
        systems = sorted(set(deltas) - set(players))
        shard = shard_of(posting.applied[0].id)
        first = systems[0] if systems else None
        await _POST.execute(
            self._session,
            {
                **_transfer_arrays(posting.applied, now),
                **_delta_arrays(players, deltas),
                "system_id": first,
                "system_debits": deltas[first][0] if first else 0,
                "system_credits": deltas[first][1] if first else 0,
                "shard": shard,
            },
        )
        for account_id in systems[1:]:
            debits, credits = deltas[account_id]
            await _ADD_TO_SHARD.execute(
                self._session,
                {"id": account_id, "shard": shard, "debits": debits, "credits": credits},
            )

    async def player_balances(self, player_id: str) -> dict[str, Money]:
        query = select(ledger_accounts).where(ledger_accounts.c.owner == player_id)
        rows = (await self._session.execute(query)).all()
        return {row.currency: _balance(row).net for row in rows}

    async def balance(self, account_id: str) -> Balance | None:
        query = select(ledger_accounts).where(ledger_accounts.c.id == account_id)
        row = (await self._session.execute(query)).first()
        return None if row is None else _balance(row)


@dataclass(frozen=True, slots=True)
class DriverStatement:
    """SQL sent to the driver as is: the hot statements skip SQLAlchemy's compile step.

    Written with ``:name`` parameters for reading; sent with ``$n`` placeholders.
    """

    sql: str
    names: tuple[str, ...]

    @classmethod
    def of(cls, sql: str) -> DriverStatement:
        names: list[str] = []

        def placeholder(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        return cls(re.sub(r"(?<![:\w]):([a-z_]+)", placeholder, sql), tuple(names))

    async def execute(self, session: AsyncSession, values: Mapping[str, Any]) -> Sequence[Any]:
        connection = await session.connection()
        params = tuple(values[name] for name in self.names)
        result = await connection.exec_driver_sql(self.sql, params)
        return result.all() if result.returns_rows else ()


_LOAD_ACCOUNTS = DriverStatement.of(
    """
    WITH locked AS (
        SELECT id, kind, currency, owner, debits, credits FROM ledger_accounts
        WHERE id = ANY(CAST(:players AS text[])) ORDER BY id FOR UPDATE
    )
    SELECT * FROM locked
    UNION ALL
    SELECT a.id, a.kind, a.currency, a.owner,
           CAST(a.debits + COALESCE(sum(s.debits), 0) AS bigint),
           CAST(a.credits + COALESCE(sum(s.credits), 0) AS bigint)
    FROM ledger_accounts AS a LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
    WHERE a.id = ANY(CAST(:system AS text[]))
    GROUP BY a.id
    """
)

# A system account's balance is its row plus its shards (migration 0003): the
# hot house account is spread over SHARDS rows so settlements do not queue on one.
SHARDS = 16
_ADD_TO_SHARD = DriverStatement.of(
    """
    UPDATE system_balance_shards
    SET debits = debits + CAST(:debits AS bigint), credits = credits + CAST(:credits AS bigint)
    WHERE account_id = CAST(:id AS text) AND shard = CAST(:shard AS smallint)
    """
)

_ALL_BALANCES = text(
    """
    SELECT a.id, a.kind, a.currency, a.owner,
           CAST(a.debits + COALESCE(sum(s.debits), 0) AS bigint) AS debits,
           CAST(a.credits + COALESCE(sum(s.credits), 0) AS bigint) AS credits
    FROM ledger_accounts AS a LEFT JOIN system_balance_shards AS s ON s.account_id = a.id
    GROUP BY a.id
    """
)


def shard_of(transfer_id: str) -> int:
    """A stable shard per posting, so concurrent postings spread over the shards."""
    return zlib.crc32(transfer_id.encode()) % SHARDS


# A posting in one round trip: transfers, their entries (whose foreign key is
# checked at the end of the statement, after the CTE inserted the transfers), the
# player balances, and one system account's shard.
_POST = DriverStatement.of(
    """
    WITH posted AS (
        INSERT INTO transfers (id, debit_account_id, credit_account_id, amount, currency,
                               code, reference, content_hash, posted_at)
        SELECT * FROM unnest(
            CAST(:ids AS text[]), CAST(:debit_ids AS text[]), CAST(:credit_ids AS text[]),
            CAST(:amounts AS bigint[]), CAST(:currencies AS text[]), CAST(:codes AS smallint[]),
            CAST(:references AS text[]), CAST(:hashes AS text[]),
            CAST(:posted_at AS timestamptz[]))
        RETURNING id
    ), legs AS (
        INSERT INTO entries (transfer_id, account_id, amount, currency)
        SELECT * FROM unnest(
            CAST(:entry_transfers AS text[]), CAST(:entry_accounts AS text[]),
            CAST(:entry_amounts AS bigint[]), CAST(:entry_currencies AS text[]))
        RETURNING transfer_id
    ), players AS (
        UPDATE ledger_accounts AS a
        SET debits = a.debits + d.debits, credits = a.credits + d.credits,
            version = a.version + 1
        FROM unnest(
            CAST(:account_ids AS text[]), CAST(:debits AS bigint[]), CAST(:credits AS bigint[]))
            AS d(id, debits, credits)
        WHERE a.id = d.id
        RETURNING a.id
    )
    UPDATE system_balance_shards
    SET debits = debits + CAST(:system_debits AS bigint),
        credits = credits + CAST(:system_credits AS bigint)
    WHERE account_id = CAST(:system_id AS text) AND shard = CAST(:shard AS smallint)
    """
)


def _transfer_arrays(applied: Sequence[Transfer], now: datetime) -> dict[str, list[Any]]:
    legs = [entry for transfer in applied for entry in entries_of(transfer)]
    return {
        "ids": [t.id for t in applied],
        "debit_ids": [t.debit_account_id for t in applied],
        "credit_ids": [t.credit_account_id for t in applied],
        "amounts": [t.amount.amount for t in applied],
        "currencies": [t.amount.currency for t in applied],
        "codes": [int(t.code) for t in applied],
        "references": [t.reference for t in applied],
        "hashes": [content_hash(t) for t in applied],
        "posted_at": [now] * len(applied),
        "entry_transfers": [e.transfer_id for e in legs],
        "entry_accounts": [e.account_id for e in legs],
        "entry_amounts": [e.amount.amount for e in legs],
        "entry_currencies": [e.amount.currency for e in legs],
    }


def _delta_arrays(ids: list[str], deltas: dict[str, tuple[int, int]]) -> dict[str, list[Any]]:
    return {
        "account_ids": ids,
        "debits": [deltas[i][0] for i in ids],
        "credits": [deltas[i][1] for i in ids],
    }


def _deltas(before: Ledger, posting: Posting) -> dict[str, tuple[int, int]]:
    deltas: dict[str, tuple[int, int]] = {}
    for account_id, after in posting.ledger.balances.items():
        old = before.balances.get(account_id)
        debits = after.debits - (old.debits if old else 0)
        credits = after.credits - (old.credits if old else 0)
        if debits or credits:
            deltas[account_id] = (debits, credits)
    return deltas


# --------------------------------------------------------------------------- holds


@dataclass(frozen=True, slots=True)
class StoredHold:
    hold: Hold
    idempotency_key: str
    created_at: datetime


def _hold(row: Any) -> StoredHold:
    hold = Hold(
        id=row.id,
        player_id=row.player_id,
        table_id=row.table_id,
        amount=Money(row.amount, row.currency),
        status=HoldStatus(row.status),
        game_id=row.game_id,
    )
    return StoredHold(hold, row.idempotency_key, row.created_at)


class HoldRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, hold_id: str, *, lock: bool = False) -> StoredHold | None:
        found = await self.get_many([hold_id], lock=lock)
        return found.get(hold_id)

    async def get_many(self, hold_ids: Iterable[str], *, lock: bool) -> dict[str, StoredHold]:
        ids = sorted(set(hold_ids))
        if not ids:
            return {}
        query = select(holds).where(holds.c.id.in_(ids)).order_by(holds.c.id)
        if lock:
            query = query.with_for_update()
        return {row.id: _hold(row) for row in (await self._session.execute(query)).all()}

    async def add(self, hold: Hold, idempotency_key: str, now: datetime) -> None:
        await self._session.execute(
            holds.insert().values(
                id=hold.id,
                player_id=hold.player_id,
                table_id=hold.table_id,
                currency=hold.currency,
                amount=hold.amount.amount,
                status=hold.status.value,
                game_id=hold.game_id,
                idempotency_key=idempotency_key,
                created_at=now,
                updated_at=now,
            )
        )

    async def save(self, hold: Hold, now: datetime, release_reason: str | None = None) -> None:
        values: dict[str, Any] = {
            "amount": hold.amount.amount,
            "status": hold.status.value,
            "game_id": hold.game_id,
            "updated_at": now,
        }
        if release_reason is not None:
            values["release_reason"] = release_reason
        await self._session.execute(update(holds).where(holds.c.id == hold.id).values(values))

    async def save_many(self, changed: Sequence[Hold], now: datetime) -> None:
        for hold in changed:
            await self.save(hold, now)

    async def held_by_currency(self, player_id: str) -> dict[str, int]:
        query = (
            select(holds.c.currency, func.sum(holds.c.amount))
            .where(and_(holds.c.player_id == player_id, holds.c.status == HoldStatus.OPEN.value))
            .group_by(holds.c.currency)
        )
        return {currency: int(total) for currency, total in (await self._session.execute(query))}


# --------------------------------------------------------------------------- payments


@dataclass(frozen=True, slots=True)
class StoredPayment:
    payment: Payment
    method: str
    provider: str
    idempotency_key: str
    created_at: datetime


def _payment(row: Any) -> StoredPayment:
    payment = Payment(
        id=row.id,
        kind=PaymentKind(row.kind),
        player_id=row.player_id,
        amount=Money(row.amount, row.currency),
        status=PaymentStatus(row.status),
        provider_reference=row.provider_reference,
        failure_reason=row.failure_reason,
    )
    return StoredPayment(payment, row.method, row.provider, row.idempotency_key, row.created_at)


class PaymentRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, payment_id: str, *, lock: bool = False) -> StoredPayment | None:
        query = select(payments).where(payments.c.id == payment_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).first()
        return None if row is None else _payment(row)

    async def add(self, stored: StoredPayment, now: datetime) -> None:
        payment = stored.payment
        await self._session.execute(
            payments.insert().values(
                id=payment.id,
                kind=payment.kind.value,
                player_id=payment.player_id,
                currency=payment.amount.currency,
                amount=payment.amount.amount,
                status=payment.status.value,
                method=stored.method,
                provider=stored.provider,
                idempotency_key=stored.idempotency_key,
                created_at=now,
                updated_at=now,
            )
        )

    async def save(self, payment: Payment, now: datetime) -> None:
        await self._session.execute(
            update(payments)
            .where(payments.c.id == payment.id)
            .values(
                status=payment.status.value,
                provider_reference=payment.provider_reference,
                failure_reason=payment.failure_reason,
                updated_at=now,
            )
        )

    async def deposits_since(self, player_id: str, currency: str, since: datetime) -> list[Deposit]:
        """Deposits that count against limits: confirmed, or requested and not yet failed."""
        query = select(payments.c.created_at, payments.c.amount).where(
            payments.c.player_id == player_id,
            payments.c.currency == currency,
            payments.c.kind == PaymentKind.DEPOSIT.value,
            payments.c.status != PaymentStatus.FAILED.value,
            payments.c.created_at > since,
        )
        rows = (await self._session.execute(query)).all()
        return [Deposit(row.created_at, Money(row.amount, currency)) for row in rows]

    async def requested_before(self, moment: datetime, limit: int) -> list[StoredPayment]:
        query = (
            select(payments)
            .where(payments.c.status == PaymentStatus.REQUESTED.value)
            .where(payments.c.created_at <= moment)
            .order_by(payments.c.created_at)
            .limit(limit)
        )
        return [_payment(row) for row in (await self._session.execute(query)).all()]


# --------------------------------------------------------------------------- players, limits


@dataclass(frozen=True, slots=True)
class PlayerState:
    """What the wallet knows about a player beyond their money."""

    player_id: str
    frozen_reason: str | None
    self_exclusion: SelfExclusion | None


class PlayerRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, player_id: str, now: datetime, *, lock: bool = False) -> PlayerState:
        """The player's row, created on first use; locked when asked (limits and freezes)."""
        await self._session.execute(
            insert(players)
            .values(player_id=player_id, self_excluded_indefinitely=False, updated_at=now)
            .on_conflict_do_nothing()
        )
        query = select(players).where(players.c.player_id == player_id)
        if lock:
            query = query.with_for_update()
        row = (await self._session.execute(query)).one()
        exclusion = None
        if row.self_excluded_from is not None:
            until = None if row.self_excluded_indefinitely else row.self_excluded_until
            exclusion = SelfExclusion(row.self_excluded_from, until)
        return PlayerState(row.player_id, row.frozen_reason, exclusion)

    async def frozen_reason(self, player_id: str) -> str | None:
        """Why the player is frozen, or None; a read that creates no row."""
        query = select(players.c.frozen_reason).where(players.c.player_id == player_id)
        reason: str | None = await self._session.scalar(query)
        return reason

    async def set_frozen(
        self, player_id: str, reason: str | None, alert_id: str | None, now: datetime
    ) -> None:
        await self._session.execute(
            update(players)
            .where(players.c.player_id == player_id)
            .values(frozen_reason=reason, frozen_alert_id=alert_id, updated_at=now)
        )

    async def set_self_exclusion(
        self, player_id: str, exclusion: SelfExclusion | None, now: datetime
    ) -> None:
        await self._session.execute(
            update(players)
            .where(players.c.player_id == player_id)
            .values(
                self_excluded_from=exclusion.started_at if exclusion else None,
                self_excluded_until=exclusion.ends_at if exclusion else None,
                self_excluded_indefinitely=exclusion is not None and exclusion.ends_at is None,
                updated_at=now,
            )
        )

    async def limits(self, state: PlayerState, currency: str) -> PlayerLimits:
        query = select(deposit_limits).where(
            deposit_limits.c.player_id == state.player_id, deposit_limits.c.currency == currency
        )
        current: dict[LimitPeriod, Money] = {}
        pending: dict[LimitPeriod, PendingIncrease] = {}
        for row in (await self._session.execute(query)).all():
            period = LimitPeriod(row.period)
            if row.amount is not None:
                current[period] = Money(row.amount, currency)
            if row.pending_effective_at is not None:
                amount = None if row.pending_amount is None else Money(row.pending_amount, currency)
                pending[period] = PendingIncrease(amount, row.pending_effective_at)
        return PlayerLimits(
            player_id=state.player_id,
            currency=currency,
            deposit_limits=current,
            pending=pending,
            self_exclusion=state.self_exclusion,
            frozen_reason=state.frozen_reason,
        )

    async def limit_currencies(self, player_id: str) -> list[str]:
        query = (
            select(deposit_limits.c.currency)
            .where(deposit_limits.c.player_id == player_id)
            .distinct()
            .order_by(deposit_limits.c.currency)
        )
        return list((await self._session.execute(query)).scalars())

    async def save_limits(self, limits: PlayerLimits, now: datetime) -> None:
        """Rewrite the player's limits in this currency from the domain object."""
        await self._session.execute(
            deposit_limits.delete().where(
                deposit_limits.c.player_id == limits.player_id,
                deposit_limits.c.currency == limits.currency,
            )
        )
        rows = [
            {
                "player_id": limits.player_id,
                "currency": limits.currency,
                "period": period.value,
                "amount": _minor(limits.deposit_limits.get(period)),
                "pending_amount": _minor(limits.pending[period].amount)
                if period in limits.pending
                else None,
                "pending_effective_at": limits.pending[period].effective_at
                if period in limits.pending
                else None,
                "updated_at": now,
            }
            for period in LimitPeriod
            if period in limits.deposit_limits or period in limits.pending
        ]
        if rows:
            await self._session.execute(deposit_limits.insert().values(rows))


def _minor(money: Money | None) -> int | None:
    return None if money is None else money.amount


# --------------------------------------------------------------------------- settlements


@dataclass(frozen=True, slots=True)
class SettlementRecord:
    """One settled (or refused) game or match, with the schedule version it used."""

    id: str
    game_id: str
    game_number: int
    table_id: str
    kind: str
    currency: str
    winner_id: str | None
    loser_id: str | None
    win_sum: int
    commission_total: int
    rate: str
    schedule_version: str
    disconnection: bool
    status: str
    detail: str | None
    source_event_id: str
    settled_at: datetime


class SettlementRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def get(self, settlement_id: str) -> SettlementRecord | None:
        rows = await _GET_SETTLEMENT.execute(self._session, {"id": settlement_id})
        return SettlementRecord(*rows[0]) if rows else None

    async def add(self, record: SettlementRecord) -> None:
        await _ADD_SETTLEMENT.execute(self._session, _record_values(record))


_SETTLEMENT_COLUMNS = SettlementRecord.__slots__
# Every settled game reads and writes one of these: sent to the driver directly.
_GET_SETTLEMENT = DriverStatement.of(
    f"SELECT {', '.join(_SETTLEMENT_COLUMNS)} FROM settlements WHERE id = CAST(:id AS text)"
)
_ADD_SETTLEMENT = DriverStatement.of(
    f"INSERT INTO settlements ({', '.join(_SETTLEMENT_COLUMNS)}) "
    f"VALUES ({', '.join(f':{name}' for name in _SETTLEMENT_COLUMNS)})"
)


def _record_values(record: SettlementRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in _SETTLEMENT_COLUMNS}


# --------------------------------------------------------------------------- audit


class AuditRepository:
    """Reads everything the audit checks; run it in a REPEATABLE READ transaction."""

    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def snapshot(self) -> AuditSnapshot:
        account_rows = (await self._session.execute(_ALL_BALANCES)).all()
        entry_rows = (await self._session.execute(select(entries))).all()
        hold_rows = (await self._session.execute(select(holds))).all()
        return AuditSnapshot(
            accounts={row.id: _account(row) for row in account_rows},
            balances={row.id: _balance(row) for row in account_rows},
            entries=[
                Entry(row.transfer_id, row.account_id, Money(row.amount, row.currency))
                for row in entry_rows
            ],
            holds=[_hold(row).hold for row in hold_rows],
            live_table_ids=await self._live_tables(),
        )

    async def _live_tables(self) -> frozenset[str]:
        """Tables with an open hold that no later settlement closed.

        The wallet learns that a table's game is over from its settlement; an
        open hold placed before its table's last settlement was left behind.
        """
        settled = (
            select(settlements.c.id)
            .where(settlements.c.table_id == holds.c.table_id)
            .where(settlements.c.settled_at >= holds.c.created_at)
            .where(settlements.c.status == "settled")  # a refused result closes nothing
            .exists()
        )
        query = (
            select(holds.c.table_id)
            .where(holds.c.status == HoldStatus.OPEN.value)
            .where(~settled)
            .distinct()
        )
        return frozenset((await self._session.execute(query)).scalars())


# --------------------------------------------------------------------------- unit of work


class WalletRepositories:
    """The repositories over one session, shared by the unit of work and consumers."""

    ledger: LedgerRepository
    holds: HoldRepository
    payments: PaymentRepository
    players: PlayerRepository
    settlements: SettlementRepository
    audit: AuditRepository

    def _attach(self, session: AsyncSession) -> None:
        self.ledger = LedgerRepository(session)
        self.holds = HoldRepository(session)
        self.payments = PaymentRepository(session)
        self.players = PlayerRepository(session)
        self.settlements = SettlementRepository(session)
        self.audit = AuditRepository(session)


class WalletUnitOfWork(UnitOfWork, WalletRepositories):
    """One use case's transaction: repositories, events to the outbox, commit."""

    def _start(self) -> None:
        self._attach(self.session)


class InboxTransaction(WalletRepositories):
    """The wallet's view of a consumer's inbox transaction: same repositories, same outbox.

    The consumer owns the transaction (its inbox row commits with our effect),
    so events are written to the outbox by :meth:`flush` and committed by it.
    """

    def __init__(self, session: AsyncSession, *, source: str, clock: Clock) -> None:
        self.session = session
        self.clock = clock
        self._source = source
        self._pending: list[Envelope] = []
        self._attach(session)

    def publish(self, topic: str, key: str, message: Message) -> Envelope:
        envelope = Envelope.wrap(
            topic=topic, key=key, message=message, source=self._source, now=self.clock.now()
        )
        self._pending.append(envelope)
        return envelope

    async def flush(self) -> None:
        if self._pending:
            await self.session.execute(
                outbox_row.insert(), [envelope.as_outbox_values() for envelope in self._pending]
            )
        self._pending = []
