"""Anti-abuse's sanctions the wallet owns: freezing (consumer group ``wallet.sanctions`` on
``tavla.antiabuse.v1``).

``AccountSanctioned`` of kind FREEZE_WALLET or TERMINATE_ACCOUNT freezes the
account (``limits.record_freeze``): no withdrawals, no new stake holds (no
seat at a table); deposits still land. The freeze's reason names the sanction
and its ``alert_id`` column the case. Stakes already held for a game in play
are neither released nor forfeited by the freeze: the game ends by its own
rules (a terminated player's tokens expire, so they disconnect and the game's
disconnection path ends it) and settles as any other, so the opponent is paid
what the game says. The balance stays frozen for the operator to decide on
(the seed says nothing about a terminated player's funds).

Exactly once: the inbox dedupes event ids, and a freeze of a frozen account
writes nothing (the same sanction under another event id, or a second one,
publishes no second AccountFrozen).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import Clock
from services.kit.events.consumer import ConsumerFactory, EventConsumer
from services.kit.events.envelope import ReceivedEvent
from services.kit.logging import get_logger
from services.wallet.limits import record_freeze
from services.wallet.store.unit_of_work import InboxTransaction
from tavla.antiabuse.v1 import events_pb2

log = get_logger(__name__)

ANTIABUSE_TOPIC = "tavla.antiabuse.v1"
SANCTIONS_GROUP = "wallet.sanctions"
ACCOUNT_SANCTIONED = events_pb2.AccountSanctioned.DESCRIPTOR.full_name
_FREEZING = {
    events_pb2.SANCTION_KIND_FREEZE_WALLET: "compliance freeze",
    events_pb2.SANCTION_KIND_TERMINATE_ACCOUNT: "account terminated",
}


class SanctionHandlers:
    def __init__(self, clock: Clock, source: str = "wallet") -> None:
        self._clock = clock
        self._source = source

    async def sanctioned(self, session: AsyncSession, event: ReceivedEvent) -> None:
        sanction = events_pb2.AccountSanctioned.FromString(event.payload)
        why = _FREEZING.get(sanction.kind)
        if why is None:
            return  # accounts' or matchmaking's
        if not sanction.account_id or len(sanction.account_id) > 36:
            log.error("sanction_unreadable", event_id=event.event_id)
            return
        tx = InboxTransaction(session, source=self._source, clock=self._clock)
        reason = f"{why} (sanction {sanction.sanction_id})"
        changed = await record_freeze(
            tx, sanction.account_id, reason, sanction.case_id, self._clock.now()
        )
        await tx.flush()
        log.info("sanction_freeze", sanction_id=sanction.sanction_id, changed=changed)


def sanctions_consumer(
    *,
    sessions: async_sessionmaker[AsyncSession],
    consumer_factory: ConsumerFactory,
    clock: Clock,
    service: str = "wallet",
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
