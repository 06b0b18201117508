"""The free play-money top-up: play-money tables work without any payment provider.

The rules (ceiling, once an hour) are in :mod:`services.wallet.domain.play_money`;
this use case locks the player's PLAY account, so two top-ups cannot both pass
the checks, and posts the one transfer. The same idempotency key again returns
the first top-up.

It asks the geo service first, for play money (``PURPOSE_PLAY_MONEY``): the
rules refuse play money only in the operator's fully blocked countries, and
when geo cannot be reached (or the call carries no client address) the top-up
goes on, as play money must not stop with geo. It is where players get play money
(besides the sandbox's PLAY deposits, which ask the same), so that is where the
fully blocked countries are kept out.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from services.kit.client_signals import ClientSignals
from services.wallet.domain.ledger import (
    TransferCode,
    play_money_issue_account,
    player_account_id,
)
from services.wallet.domain.money import PLAY, Money
from services.wallet.domain.play_money import (
    TOP_UP_INTERVAL,
    plan_top_up,
    top_up_transfer_id,
)
from services.wallet.ids import derived_id, require_key
from services.wallet.posting import post_locked
from services.wallet.use_case import UseCases
from tavla.geo.v1 import geo_pb2


@dataclass(frozen=True, slots=True)
class TopUpView:
    credited: Money
    balance: Money
    next_top_up_at: datetime


class PlayMoneyUseCases(UseCases):
    """Free play money for a player, capped and rate-limited."""

    async def top_up_play_money(
        self, *, player_id: str, idempotency_key: str, residence: str, signals: ClientSignals
    ) -> TopUpView:
        top_up_id = derived_id("play-top-up", player_id, require_key(idempotency_key))
        await self._geo.require(
            geo_pb2.PURPOSE_PLAY_MONEY, account_id=player_id, residence=residence, signals=signals
        )
        account = player_account_id(player_id, PLAY)
        now = self._clock.now()
        async with self._uow() as uow:
            await uow.ledger.open_player_accounts(player_id, [PLAY])
            ids = [account, play_money_issue_account().id]
            transfer_id = top_up_transfer_id(top_up_id)
            ledger = await uow.ledger.load(ids, [transfer_id])  # locks the player's account
            known = ledger.transfers.get(transfer_id)
            if known is not None:  # a retry: the first answer again
                last = await uow.ledger.latest_credit_at(account, TransferCode.PLAY_MONEY_TOP_UP)
                return TopUpView(known.amount, ledger.balance(account), _next(last or now))
            held = await uow.holds.held_by_currency(player_id)
            owned = ledger.balance(account) + Money(held.get(PLAY, 0), PLAY)
            last = await uow.ledger.latest_credit_at(account, TransferCode.PLAY_MONEY_TOP_UP)
            plan = plan_top_up(top_up_id, player_id, owned, last, now)
            after = await post_locked(uow, ledger, [plan.transfer], now)
            await uow.commit()
        return TopUpView(plan.transfer.amount, after.balance(account), plan.next_top_up_at)


def _next(last: datetime) -> datetime:
    return last + TOP_UP_INTERVAL
