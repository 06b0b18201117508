"""Free play money: a top-up so play-money tables work without any payment provider.

A player may top their ``PLAY`` balance up to a ceiling (10,000.00 PLAY), at
most once per interval (an hour). What they own counts, held stakes included,
so sitting at a table and topping up cannot lift them past the ceiling. The
money comes from the house's play-money issue account (``play_money_issue:PLAY``,
negative by all the play money handed out) in one balanced transfer, so the
ledger and its audit see it like any other movement. Play money has no cash
value: it can never be withdrawn (``PaymentUseCases.withdraw``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from services.wallet.domain.errors import PlayMoneyTopUpRefused, PlayMoneyTopUpTooSoon
from services.wallet.domain.ledger import (
    Transfer,
    TransferCode,
    play_money_issue_account,
    player_account_id,
)
from services.wallet.domain.money import PLAY, Money

TOP_UP_CEILING = Money(1_000_000, PLAY)  # 10,000.00 PLAY
TOP_UP_INTERVAL = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class TopUp:
    """The transfer that tops a player up, and when the next top-up becomes possible."""

    transfer: Transfer
    next_top_up_at: datetime


def top_up_transfer_id(top_up_id: str) -> str:
    return f"play-top-up:{top_up_id}"


def plan_top_up(
    top_up_id: str,
    player_id: str,
    owned: Money,
    last_top_up_at: datetime | None,
    now: datetime,
) -> TopUp:
    """Top ``player_id`` up to the ceiling, or refuse with when they may ask again.

    ``owned`` is the player's PLAY balance including what is held at tables.
    """
    if owned.currency != PLAY:
        raise PlayMoneyTopUpRefused(f"only play money (PLAY) can be topped up, not {owned}")
    if last_top_up_at is not None and now < last_top_up_at + TOP_UP_INTERVAL:
        raise PlayMoneyTopUpTooSoon(
            f"play money can be topped up once an hour; the next top-up is possible at "
            f"{(last_top_up_at + TOP_UP_INTERVAL).isoformat()}"
        )
    if owned >= TOP_UP_CEILING:
        raise PlayMoneyTopUpRefused(
            f"you already have {owned}, at least the {TOP_UP_CEILING} a top-up gives; "
            "play some games first"
        )
    transfer = Transfer(
        id=top_up_transfer_id(top_up_id),
        debit_account_id=play_money_issue_account().id,
        credit_account_id=player_account_id(player_id, PLAY),
        amount=TOP_UP_CEILING - owned,
        code=TransferCode.PLAY_MONEY_TOP_UP,
        reference=f"play-top-up:{player_id}",
    )
    return TopUp(transfer, now + TOP_UP_INTERVAL)
