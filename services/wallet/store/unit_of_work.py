"""The wallet's transactions: its repositories over one session, with the outbox."""

from __future__ import annotations

from google.protobuf.message import Message
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.clock import Clock
from services.kit.db import UnitOfWork
from services.kit.events.envelope import Envelope
from services.kit.events.tables import outbox_row
from services.wallet.store.audit import AuditRepository
from services.wallet.store.holds import HoldRepository
from services.wallet.store.ledger import LedgerRepository
from services.wallet.store.payments import PaymentRepository
from services.wallet.store.players import PlayerRepository
from services.wallet.store.settlements import SettlementRepository


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
