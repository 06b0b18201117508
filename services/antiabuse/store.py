"""Reads and writes of the anti-abuse tables (:mod:`.tables`) within one transaction.

``Facts`` keeps what detectors read, idempotently (a fact recorded twice is one
fact), and answers their questions: the accounts around one account, a pair's
games and transfers. ``AlertStore`` keeps alerts and pair restrictions.
``AccountLocks`` serialises detection per account: the facts a detector reads about
an account must include every fact about it committed before, or two concurrent
events (two logins of a ring on different partitions, two settlements of one pair)
could each miss the other's.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import String, and_, bindparam, func, or_, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.antiabuse import tables as t
from services.antiabuse.cases.tables import case_alerts, case_log, cases
from services.antiabuse.domain.chip_dumping import Transfer
from services.antiabuse.domain.findings import pair
from services.antiabuse.domain.link_strength import LINKING
from services.antiabuse.domain.multi_accounting import PairHistory, Sighting
from services.antiabuse.domain.signals import Signal, SignalKind
from tavla.antiabuse.v1.events_pb2 import AlertRevision

# A component grows one hop at a time; past this many accounts it stops growing
# (the alert says so) rather than read a whole carrier's NAT into memory.
MAX_COMPONENT = 200
# The first key of every account lock (pg_advisory_xact_lock(int, int)): anti-abuse's own.
ACCOUNT_LOCKS = 0x7ABA5E02
_LOCK = text(
    "SELECT count(pg_advisory_xact_lock(:space, k)) FROM unnest(CAST(:keys AS integer[])) AS k"
)
_TEXTS = ARRAY(String)


# Every user's sightings of some accounts' identifiers (of some kinds), those already read
# left out (as "kind:value").
_IDENTIFIED_WITH = text(
    "SELECT s.account_id, s.kind, s.value, s.first_seen, s.last_seen FROM sightings s "
    "WHERE (s.kind, s.value) IN (SELECT m.kind, m.value FROM sightings m "
    "WHERE m.account_id = ANY(CAST(:accounts AS varchar[])) "
    "AND m.kind = ANY(CAST(:kinds AS varchar[])) "
    "AND NOT (m.kind || ':' || m.value = ANY(CAST(:read AS varchar[]))))"
)


@dataclass(frozen=True)
class Restriction:
    """A standing pair restriction: its id, the sorted pair, the alert it came from."""

    restriction_id: str
    pair: tuple[str, str]
    alert_id: str


# Sightings as arrays, one row each: one statement text whatever their number (compiled
# and prepared once, where a VALUES list of n rows is a new statement for every n).
_RECORD_SIGHTINGS = text(
    "INSERT INTO sightings (account_id, kind, value, first_seen, last_seen) "
    "SELECT * FROM unnest(CAST(:accounts AS varchar[]), CAST(:kinds AS varchar[]), "
    "CAST(:values AS varchar[]), CAST(:firsts AS timestamptz[]), CAST(:lasts AS timestamptz[])) "
    "ON CONFLICT (account_id, kind, value) DO UPDATE SET "
    "first_seen = least(sightings.first_seen, excluded.first_seen), "
    "last_seen = greatest(sightings.last_seen, excluded.last_seen)"
)
_TRY_LOCK = text(
    "SELECT bool_and(pg_try_advisory_xact_lock(:space, k)) "
    "FROM unnest(CAST(:keys AS integer[])) AS k"
)


def lock_key(name: str) -> int:
    """A lock's key: 32 bits of its name (two names sharing one only wait for each other)."""
    return zlib.crc32(name.encode()) - 2**31


def account_key(account_id: str) -> int:
    return lock_key(account_id)


def identifier_key(signal: Signal) -> int:
    return lock_key(f"{signal.kind.value}:{signal.value}")


class LockOrder(Exception):
    """More locks are needed than can be taken in order now: start again holding all.

    Locks are taken in ascending key order, which no two transactions can deadlock on;
    a key below one already held is only tried, and when it is busy the work is undone
    (its savepoint, and the locks taken in it, rolled back) and done again taking every
    lock it needed in order from the start.
    """

    def __init__(self, accounts: Collection[str], identifiers: Collection[Signal]) -> None:
        super().__init__(f"{len(accounts)} accounts, {len(identifiers)} identifiers to lock")
        self.accounts = set(accounts)
        self.identifiers = set(identifiers)


class AccountLocks:
    """The accounts, and the identifiers, this transaction holds a lock on (until it ends).

    An identifier's lock (a device, an address) is taken before its sighting is written:
    two accounts seen with one identifier for the first time, at once, would otherwise
    each miss the other's sighting (no account of either is locked by the other).
    """

    def __init__(self, session: AsyncSession) -> None:
        self._session = session
        self._accounts: set[str] = set()
        self._identifiers: set[Signal] = set()
        self._keys: set[int] = set()

    @property
    def accounts(self) -> set[str]:
        return set(self._accounts)

    async def take(self, accounts: Iterable[str]) -> None:
        """Lock ``accounts`` not held yet: waiting in key order, or :class:`LockOrder`."""
        wanted = {a for a in accounts if a and a not in self._accounts}
        await self._take({account_key(a) for a in wanted}, wanted, set())
        self._accounts |= wanted

    async def take_all(self, accounts: Iterable[str], identifiers: Iterable[Signal]) -> None:
        """Both kinds at once, in one ascending order (a handler's start, after LockOrder)."""
        more_accounts = {a for a in accounts if a and a not in self._accounts}
        more_identifiers = {i for i in identifiers if i not in self._identifiers}
        keys = {account_key(a) for a in more_accounts}
        keys |= {identifier_key(i) for i in more_identifiers}
        await self._take(keys, more_accounts, more_identifiers)
        self._accounts |= more_accounts
        self._identifiers |= more_identifiers

    async def _take(self, wanted: set[int], accounts: set[str], identifiers: set[Signal]) -> None:
        keys = sorted(wanted - self._keys)
        if keys and self._keys and keys[0] < max(self._keys):
            tried = await self._session.scalar(_TRY_LOCK, {"space": ACCOUNT_LOCKS, "keys": keys})
            if not tried:
                raise LockOrder(self._accounts | accounts, self._identifiers | identifiers)
        elif keys:
            await self._session.execute(_LOCK, {"space": ACCOUNT_LOCKS, "keys": keys})
        self._keys.update(keys)


@dataclass(frozen=True)
class Seen:
    """An account seen with identifiers at a time (one sighting event's report)."""

    account_id: str
    signals: tuple[Signal, ...]
    at: datetime


class Facts:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def seen(self, account_id: str, signals: Iterable[Signal], at: datetime) -> None:
        await self.seen_all([Seen(account_id, tuple(signals), at)])

    async def seen_all(self, reports: Iterable[Seen]) -> None:
        """Record every report's sightings in one statement (one row per account and
        identifier: a pair reported twice keeps its earliest and latest time)."""
        spans: dict[tuple[str, str, str], tuple[datetime, datetime]] = {}
        for report in reports:
            for signal in report.signals:
                key = (report.account_id, signal.kind.value, signal.value)
                first, last = spans.get(key, (report.at, report.at))
                spans[key] = (min(first, report.at), max(last, report.at))
        if not spans:
            return
        keys = sorted(spans)  # one order: two writers' row locks never cross
        await self._session.execute(_RECORD_SIGHTINGS, {
            "accounts": [account for account, _, _ in keys],
            "kinds": [kind for _, kind, _ in keys],
            "values": [value for _, _, value in keys],
            "firsts": [spans[key][0] for key in keys],
            "lasts": [spans[key][1] for key in keys],
        })  # fmt: skip

    async def played(self, game_id: str, accounts: Sequence[str], at: datetime) -> bool:
        """Record who played ``game_id``; True the first time."""
        players = sorted({a for a in accounts if a})
        if len(players) != 2:
            return False
        low, high = players
        inserted = await self._session.scalar(
            insert(t.pair_games)
            .values(game_id=game_id, low_account_id=low, high_account_id=high, seen_at=at)
            .on_conflict_do_nothing()
            .returning(t.pair_games.c.game_id)
        )
        return inserted is not None

    async def transferred(self, transfer: Transfer) -> bool:
        low, high = pair(transfer.loser, transfer.winner)
        inserted = await self._session.scalar(
            insert(t.transfers)
            .values(
                settlement_id=transfer.settlement_id,
                game_id=transfer.game_id,
                loser_account_id=transfer.loser,
                winner_account_id=transfer.winner,
                low_account_id=low,
                high_account_id=high,
                amount_minor=transfer.amount_minor,
                currency=transfer.currency,
                occurred_at=transfer.at,
            )
            .on_conflict_do_nothing()
            .returning(t.transfers.c.settlement_id)
        )
        return inserted is not None

    async def disconnected(
        self, event_id: str, game_id: str, account_id: str, at: datetime
    ) -> None:
        await self._session.execute(
            insert(t.disconnects)
            .values(event_id=event_id, game_id=game_id, account_id=account_id, occurred_at=at)
            .on_conflict_do_nothing()
        )

    async def neighbourhood(
        self, account_id: str, kinds: Collection[SignalKind] = LINKING
    ) -> list[Sighting]:
        """The sightings of every account reachable from ``account_id`` through shared
        identifiers of ``kinds`` (bounded by MAX_COMPONENT accounts), all their sightings
        included (names, and kinds not followed)."""
        known: set[str] = set()
        frontier = {account_id}
        found: list[Sighting] = []
        while frontier and len(known) < MAX_COMPONENT:
            known |= frontier
            rows = await self._sightings_of(frontier)
            found += rows
            values = {(r.kind.value, r.value) for r in rows if r.kind in kinds}
            frontier = await self._accounts_with(values) - known
            frontier = set(sorted(frontier)[: MAX_COMPONENT - len(known)])
        return found

    async def identified_with(
        self, accounts: Collection[str], kinds: Collection[SignalKind],
        read: Collection[tuple[SignalKind, str]],
    ) -> list[Sighting]:
        """Every sighting (every user's) of the identifiers of ``kinds`` that ``accounts``
        were seen with, but those of ``read``: one statement, through the sightings' key
        and their index by identifier."""
        if not accounts:
            return []
        rows = await self._session.execute(
            _IDENTIFIED_WITH,
            {"accounts": sorted(set(accounts)), "kinds": sorted(k.value for k in kinds),
             "read": sorted(f"{kind.value}:{value}" for kind, value in read)},
        )  # fmt: skip
        return [
            Sighting(r.account_id, SignalKind(r.kind), r.value, r.first_seen, r.last_seen)
            for r in rows
        ]

    async def shares(self, account_id: str, kinds: Collection[SignalKind]) -> bool:
        """Whether another account was seen with an identifier of ``kinds`` that
        ``account_id`` was seen with (one indexed join: most accounts share none)."""
        mine, theirs = t.sightings.alias("mine"), t.sightings.alias("theirs")
        found = await self._session.scalar(
            select(theirs.c.account_id)
            .select_from(mine.join(theirs, and_(theirs.c.kind == mine.c.kind,
                                                theirs.c.value == mine.c.value)))
            .where(mine.c.account_id == account_id,
                   mine.c.kind.in_(sorted(k.value for k in kinds)),
                   theirs.c.account_id != account_id)
            .limit(1)
        )  # fmt: skip
        return found is not None

    async def sharing(self, accounts: Collection[str], kinds: Collection[SignalKind]) -> list[str]:
        """Those of ``accounts`` that :meth:`shares` would say yes for, in one query (in
        order)."""
        if not accounts:
            return []
        mine, theirs = t.sightings.alias("mine"), t.sightings.alias("theirs")
        found = await self._session.scalars(
            select(mine.c.account_id)
            .select_from(mine.join(theirs, and_(theirs.c.kind == mine.c.kind,
                                                theirs.c.value == mine.c.value)))
            .where(mine.c.account_id == func.any(bindparam("accounts", type_=_TEXTS)),
                   mine.c.kind.in_(sorted(k.value for k in kinds)),
                   theirs.c.account_id != mine.c.account_id)
            .distinct(),
            {"accounts": sorted(set(accounts))},
        )  # fmt: skip
        return sorted(found)

    async def _sightings_of(self, accounts: set[str]) -> list[Sighting]:
        rows = await self._session.execute(
            select(t.sightings).where(t.sightings.c.account_id.in_(sorted(accounts)))
        )
        return [
            Sighting(r.account_id, SignalKind(r.kind), r.value, r.first_seen, r.last_seen)
            for r in rows
        ]

    async def _accounts_with(self, values: set[tuple[str, str]]) -> set[str]:
        if not values:
            return set()
        rows = await self._session.scalars(
            select(t.sightings.c.account_id)
            .where(tuple_(t.sightings.c.kind, t.sightings.c.value).in_(sorted(values)))
            .distinct()
        )
        return set(rows)

    async def histories(self, accounts: set[str]) -> dict[tuple[str, str], PairHistory]:
        """Games played and money moved between any two of ``accounts``."""
        ordered = sorted(accounts)
        games: dict[tuple[str, str], list[str]] = {}
        for row in await self._session.execute(
            select(t.pair_games).where(
                t.pair_games.c.low_account_id.in_(ordered),
                t.pair_games.c.high_account_id.in_(ordered),
            )
        ):
            games.setdefault((row.low_account_id, row.high_account_id), []).append(row.game_id)
        moved: dict[tuple[str, str], dict[str, int]] = {}
        for row in await self._session.execute(
            select(
                t.transfers.c.low_account_id,
                t.transfers.c.high_account_id,
                t.transfers.c.currency,
                func.sum(t.transfers.c.amount_minor).label("total"),
            )
            .where(
                t.transfers.c.low_account_id.in_(ordered),
                t.transfers.c.high_account_id.in_(ordered),
            )
            .group_by(
                t.transfers.c.low_account_id, t.transfers.c.high_account_id, t.transfers.c.currency
            )
        ):
            moved.setdefault((row.low_account_id, row.high_account_id), {})[row.currency] = int(
                row.total
            )
        return {
            p: PairHistory(tuple(sorted(games.get(p, []))), moved.get(p))
            for p in set(games) | set(moved)
        }

    async def transfers_between(self, first: str, second: str, since: datetime) -> list[Transfer]:
        low, high = pair(first, second)
        rows = await self._session.execute(
            select(t.transfers).where(
                t.transfers.c.low_account_id == low,
                t.transfers.c.high_account_id == high,
                t.transfers.c.occurred_at >= since,
            )
        )
        return [
            Transfer(
                r.settlement_id,
                r.game_id,
                r.loser_account_id,
                r.winner_account_id,
                r.amount_minor,
                r.currency,
                r.occurred_at,
            )
            for r in rows
        ]

    async def recent_disconnects(self, account_id: str, since: datetime) -> int:
        count = await self._session.scalar(
            select(func.count()).where(
                t.disconnects.c.account_id == account_id, t.disconnects.c.occurred_at >= since
            )
        )
        return int(count or 0)


@dataclass(frozen=True)
class StoredAlert:
    """An alert's row as raise_alert reads it: the message and what it last held."""

    alert_id: str
    message: bytes
    evidence_digest: str
    updated_at: datetime


class AlertStore:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(
        self,
        *,
        alert_id: str,
        fingerprint: str,
        subject_key: str,
        evidence_digest: str,
        detector: str,
        kind: int,
        severity: int,
        status: int,
        raised_at: datetime,
        message: bytes,
        subjects: Sequence[str],
    ) -> str:
        """Store a new alert (the caller holds its subjects' locks)."""
        await self._session.execute(
            insert(t.alerts).values(
                alert_id=alert_id,
                fingerprint=fingerprint,
                subject_key=subject_key,
                evidence_digest=evidence_digest,
                detector=detector,
                kind=kind,
                severity=severity,
                status=status,
                raised_at=raised_at,
                updated_at=raised_at,
                message=message,
            )
        )
        await self._session.execute(
            insert(t.alert_subjects),
            [{"alert_id": alert_id, "account_id": account} for account in subjects],
        )
        return alert_id

    async def latest(self, subject_key: str) -> StoredAlert | None:
        """The latest alert of a detector and subjects, its row locked until the
        transaction ends (an officer resolving it meanwhile waits, and is not undone)."""
        row = (
            await self._session.execute(
                select(
                    t.alerts.c.alert_id,
                    t.alerts.c.message,
                    t.alerts.c.evidence_digest,
                    t.alerts.c.updated_at,
                )
                .where(t.alerts.c.subject_key == subject_key)
                .order_by(t.alerts.c.raised_at.desc(), t.alerts.c.alert_id.desc())
                .limit(1)
                .with_for_update()
            )
        ).first()
        if row is None:
            return None
        return StoredAlert(row.alert_id, row.message, row.evidence_digest, row.updated_at)

    async def update(
        self, alert_id: str, *, severity: int, message: bytes, evidence_digest: str,
        at: datetime,
    ) -> None:
        """New evidence on an open alert (the caller holds its row lock)."""
        await self._session.execute(
            update(t.alerts)
            .where(t.alerts.c.alert_id == alert_id)
            .values(severity=severity, message=message, evidence_digest=evidence_digest,
                    updated_at=at)
        )

    async def record(self, alert_id: str, at: datetime, revision: AlertRevision) -> None:
        """One more step of the alert's history (the caller holds its row lock)."""
        last = await self._session.scalar(
            select(func.coalesce(func.max(t.alert_history.c.sequence), 0))
            .where(t.alert_history.c.alert_id == alert_id)
        )
        revision.sequence = int(last or 0) + 1
        await self._session.execute(t.alert_history.insert().values(
            alert_id=alert_id, sequence=revision.sequence, at=at,
            message=revision.SerializeToString(),
        ))

    async def set_severity(self, alert_id: str, severity: int, message: bytes,
                           at: datetime) -> None:
        """The alert's severity and message changed by its detector (the caller holds its
        row lock)."""
        await self._session.execute(
            update(t.alerts)
            .where(t.alerts.c.alert_id == alert_id)
            .values(severity=severity, message=message, updated_at=at)
        )

    async def locked_case_of(self, alert_id: str) -> str | None:
        """The case that holds the alert, its row locked (before the alert's, as the case
        service takes them), or None."""
        case_id: str | None = await self._session.scalar(
            select(case_alerts.c.case_id).where(case_alerts.c.alert_id == alert_id))
        if case_id is not None:
            await self._session.execute(
                select(cases.c.case_id).where(cases.c.case_id == case_id).with_for_update())
        return case_id

    async def note_in_case(self, case_id: str, at: datetime, actor: str, action: str,
                           detail: str) -> None:
        """One more line of a case's log (the caller holds the case's row lock)."""
        last = await self._session.scalar(
            select(func.coalesce(func.max(case_log.c.sequence), 0))
            .where(case_log.c.case_id == case_id))
        await self._session.execute(case_log.insert().values(
            case_id=case_id, sequence=int(last or 0) + 1, at=at, actor=actor,
            action=action, detail=detail))

    async def history(self, alert_id: str) -> list[AlertRevision]:
        rows = await self._session.scalars(
            select(t.alert_history.c.message)
            .where(t.alert_history.c.alert_id == alert_id)
            .order_by(t.alert_history.c.sequence)
        )
        return [AlertRevision.FromString(message) for message in rows]

    async def get(self, alert_id: str, *, lock: bool = False) -> bytes | None:
        query = select(t.alerts.c.message).where(t.alerts.c.alert_id == alert_id)
        found: bytes | None = await self._session.scalar(query.with_for_update() if lock else query)
        return found

    async def set_status(self, alert_id: str, status: int, message: bytes) -> None:
        await self._session.execute(
            update(t.alerts)
            .where(t.alerts.c.alert_id == alert_id)
            .values(status=status, message=message)
        )

    async def page(
        self,
        *,
        account_id: str,
        kind: int,
        min_severity: int,
        status: int,
        limit: int,
        after: tuple[datetime, str] | None,
    ) -> list[tuple[datetime, str, bytes]]:
        query = select(t.alerts.c.raised_at, t.alerts.c.alert_id, t.alerts.c.message)
        conditions = []
        if account_id:
            query = query.join(t.alert_subjects, t.alert_subjects.c.alert_id == t.alerts.c.alert_id)
            conditions.append(t.alert_subjects.c.account_id == account_id)
        if kind:
            conditions.append(t.alerts.c.kind == kind)
        if min_severity:
            conditions.append(t.alerts.c.severity >= min_severity)
        if status:
            conditions.append(t.alerts.c.status == status)
        if after is not None:
            at, alert_id = after
            conditions.append(
                or_(
                    t.alerts.c.raised_at < at,
                    and_(t.alerts.c.raised_at == at, t.alerts.c.alert_id < alert_id),
                )
            )
        rows = await self._session.execute(
            query.where(*conditions)
            .order_by(t.alerts.c.raised_at.desc(), t.alerts.c.alert_id.desc())
            .limit(limit)
        )
        return [(r.raised_at, r.alert_id, r.message) for r in rows]

    async def restrict(
        self,
        *,
        pairs: Sequence[tuple[str, str]],
        reason: int,
        alert_id: str,
        at: datetime,
        new_id: Callable[[], str],
    ) -> list[tuple[str, tuple[str, str]]]:
        """Record a verdict for each pair not yet restricted for ``reason``, in one statement:
        the (restriction id, pair) of those recorded now."""
        if not pairs:
            return []
        rows = await self._session.execute(
            insert(t.pair_restrictions)
            .values(
                [
                    {
                        "restriction_id": new_id(),
                        "low_account_id": low,
                        "high_account_id": high,
                        "reason": reason,
                        "alert_id": alert_id,
                        "restricted_at": at,
                    }
                    for low, high in pairs
                ]
            )
            .on_conflict_do_nothing()
            .returning(
                t.pair_restrictions.c.restriction_id,
                t.pair_restrictions.c.low_account_id,
                t.pair_restrictions.c.high_account_id,
            )
        )
        recorded = [(r.restriction_id, (r.low_account_id, r.high_account_id)) for r in rows]
        return sorted(recorded, key=lambda item: item[1])

    async def standing(self, accounts: Collection[str], reason: int) -> list[Restriction]:
        """The standing (not lifted) restrictions for ``reason`` between two of ``accounts``."""
        if len(accounts) < 2:
            return []
        r = t.pair_restrictions.c
        among = bindparam("accounts", sorted(set(accounts)), type_=_TEXTS)
        rows = await self._session.execute(
            select(r.restriction_id, r.low_account_id, r.high_account_id, r.alert_id)
            .where(r.low_account_id == func.any(among), r.high_account_id == func.any(among),
                   r.reason == reason, r.lifted_at.is_(None))
            .order_by(r.low_account_id, r.high_account_id)
        )  # fmt: skip
        return [Restriction(row.restriction_id, (row.low_account_id, row.high_account_id),
                            row.alert_id) for row in rows]  # fmt: skip

    async def lift(self, restriction_ids: Sequence[str], at: datetime, detail: str) -> list[str]:
        """Mark standing restrictions lifted: the ids lifted now (a lifted one is left as is)."""
        if not restriction_ids:
            return []
        r = t.pair_restrictions.c
        rows = await self._session.scalars(
            update(t.pair_restrictions)
            .where(r.restriction_id.in_(sorted(restriction_ids)), r.lifted_at.is_(None))
            .values(lifted_at=at, lift_detail=detail)
            .returning(r.restriction_id)
        )
        return sorted(rows)
