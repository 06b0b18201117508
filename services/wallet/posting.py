"""What a use case's transaction offers, and posting transfers on its locked ledger slice."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from google.protobuf.message import Message

from services.wallet.domain.ledger import Ledger, Transfer, player_account_id, post
from services.wallet.store.holds import HoldRepository
from services.wallet.store.ledger import LedgerRepository
from services.wallet.store.payments import PaymentRepository
from services.wallet.store.players import PlayerRepository
from services.wallet.store.settlements import SettlementRepository


class Transaction(Protocol):
    """What a use case needs from its transaction: repositories and the outbox."""

    ledger: LedgerRepository
    holds: HoldRepository
    payments: PaymentRepository
    players: PlayerRepository
    settlements: SettlementRepository

    def publish(self, topic: str, key: str, message: Message) -> object: ...


async def lock_ledger(
    tx: Transaction,
    transfers: Sequence[Transfer],
    *,
    open_for: Sequence[str] = (),
    known_transfers: bool = True,
) -> Ledger:
    """Load (and lock) what a batch touches: its accounts and, unless told not to, the
    already-posted transfers with its ids (the domain replays those).

    ``open_for``: players whose accounts in the batch's currency are opened if missing.
    """
    account_ids = {t.debit_account_id for t in transfers} | {t.credit_account_id for t in transfers}
    transfer_ids = [t.id for t in transfers] if known_transfers else []
    before = await tx.ledger.load(account_ids, transfer_ids)
    missing = [p for p in open_for if _player_account_ids(p, transfers) - set(before.accounts)]
    if missing:
        for player in missing:
            await tx.ledger.open_player_accounts(player, {t.amount.currency for t in transfers})
        before = await tx.ledger.load(account_ids, transfer_ids)
    return before


async def post_locked(
    tx: Transaction, before: Ledger, transfers: Sequence[Transfer], now: datetime
) -> Ledger:
    """Post a batch through the domain on the locked ledger slice, and save the result."""
    posting = post(before, transfers)
    await tx.ledger.save(before, posting, now)
    return posting.ledger


async def post_transfers(tx: Transaction, transfers: Sequence[Transfer], now: datetime) -> Ledger:
    """Lock what the batch touches, post it through the domain, save it."""
    return await post_locked(tx, await lock_ledger(tx, transfers), transfers, now)


def _player_account_ids(player_id: str, transfers: Sequence[Transfer]) -> set[str]:
    return {player_account_id(player_id, t.amount.currency) for t in transfers}
