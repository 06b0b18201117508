"""Anti-abuse's sanctions that accounts owns: suspension and termination (consumer group
``accounts.sanctions`` on ``tavla.antiabuse.v1``).

``AccountSanctioned`` of kind SUSPEND_ACCOUNT makes the account FROZEN, of kind
TERMINATE_ACCOUNT makes it CLOSED and blocks the person's identifiers at
registration (``blocklist.py``). Either way every session of the account is
revoked, so no refresh token works again, and logins are refused (the status
check in ``service.login``). Access tokens already issued are not revoked
(they are stateless): they stop working when they expire, within
``TAVLA_JWT_TTL_SECONDS`` (15 minutes by default) of the sanction.

Exactly once: the kit's inbox dedupes event ids, and ``applied_sanctions``
(keyed by the sanction id) makes the same sanction under another event id a
no-op; the state change, the sanction's row and AccountSuspended or
AccountTerminated (the outbox) commit with the inbox row. Other kinds are
another service's (the wallet freezes, matchmaking forbids pairs) and skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.message import Message
from sqlalchemy import Column, DateTime, MetaData, String, Table
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.accounts.blocklist import Blocklist, identifiers_of
from services.accounts.domain import TOPIC
from services.accounts.store import AccountRepository, SessionRepository
from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import Envelope, ReceivedEvent
from services.kit.events.tables import outbox_row
from services.kit.logging import get_logger
from tavla.accounts.v1 import events_pb2
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events

log = get_logger(__name__)

ANTIABUSE_TOPIC = "tavla.antiabuse.v1"
SANCTIONS_GROUP = "accounts.sanctions"
ACCOUNT_SANCTIONED = antiabuse_events.AccountSanctioned.DESCRIPTOR.full_name
_KINDS = {
    antiabuse_events.SANCTION_KIND_SUSPEND_ACCOUNT: "suspend",
    antiabuse_events.SANCTION_KIND_TERMINATE_ACCOUNT: "terminate",
}

metadata = MetaData()

applied_sanctions = Table(
    "applied_sanctions",
    metadata,
    Column("sanction_id", String(36), primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("case_id", String(36), nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False),
)


class SanctionHandlers:
    def __init__(self, clock: Clock, source: str = "accounts") -> None:
        self._clock = clock
        self._source = source

    async def sanctioned(self, session: AsyncSession, event: ReceivedEvent) -> None:
        sanction = antiabuse_events.AccountSanctioned.FromString(event.payload)
        kind = _KINDS.get(sanction.kind)
        if kind is None:
            return  # the wallet's or matchmaking's
        if not sanction.sanction_id or not sanction.account_id:
            log.error("sanction_unreadable", event_id=event.event_id)
            return
        now = self._clock.now()
        accounts = AccountRepository(session)
        account = await accounts.get_for_update(sanction.account_id)
        if account is None:
            log.error("sanction_for_unknown_account", sanction_id=sanction.sanction_id)
            return
        first = await session.execute(
            insert(applied_sanctions)
            .values(sanction_id=sanction.sanction_id, account_id=sanction.account_id,
                    kind=kind, case_id=sanction.case_id, applied_at=now)
            .on_conflict_do_nothing()
            .returning(applied_sanctions.c.sanction_id)
        )
        if first.first() is None:
            return  # the same sanction under another event id: applied already
        sessions = SessionRepository(session)
        await sessions.revoke_all(account.account_id, now, kind)
        fact: Message
        if kind == "suspend":
            await accounts.save(account.suspended())
            fact = self._suspended(sanction, now)
        else:
            await accounts.save(account.terminated())
            devices, addresses = await sessions.signals_of(account.account_id)
            blocked = identifiers_of(account.email, devices, addresses)
            await Blocklist(session).add(
                blocked, account_id=account.account_id, sanction_id=sanction.sanction_id, at=now
            )
            fact = self._terminated(sanction, len(blocked), now)
        envelope = Envelope.wrap(topic=TOPIC, key=account.account_id, message=fact,
                                 source=self._source, now=now)
        await session.execute(outbox_row.insert().values(envelope.as_outbox_values()))
        log.info("sanction_applied", sanction_id=sanction.sanction_id, kind=kind)

    @staticmethod
    def _suspended(
        sanction: antiabuse_events.AccountSanctioned, now: datetime
    ) -> events_pb2.AccountSuspended:
        fact = events_pb2.AccountSuspended(
            account_id=sanction.account_id, sanction_id=sanction.sanction_id,
            case_id=sanction.case_id,
        )
        fact.occurred_at.FromDatetime(now.astimezone(UTC))
        return fact

    @staticmethod
    def _terminated(
        sanction: antiabuse_events.AccountSanctioned, blocked: int, now: datetime
    ) -> events_pb2.AccountTerminated:
        fact = events_pb2.AccountTerminated(
            account_id=sanction.account_id, sanction_id=sanction.sanction_id,
            case_id=sanction.case_id, blocked_identifiers=blocked,
        )
        fact.occurred_at.FromDatetime(now.astimezone(UTC))
        return fact


def sanctions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "accounts",
) -> EventConsumer:
    handlers = SanctionHandlers(clock, service)
    return EventConsumer(
        service=service,
        name="sanctions",
        sessions=sessions,
        consumer_factory=consumer_factory,
        handlers={ACCOUNT_SANCTIONED: handlers.sanctioned},
        clock=clock,
    )
