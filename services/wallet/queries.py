"""Read-only use cases: a player's balances and commission quotes."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from services.kit.money_bounds import Bound
from services.wallet.domain.commission import CommissionQuote, quote_match, quote_single_game
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import require_playable_currency, schedule_in_force
from services.wallet.domain.terms import Match, MoneyGame, WinType
from services.wallet.use_case import UseCases


@dataclass(frozen=True, slots=True)
class CurrencyBalance:
    currency: str
    available: Money
    held: Money


@dataclass(frozen=True, slots=True)
class Balances:
    balances: tuple[CurrencyBalance, ...]
    frozen: bool


class WalletQueries(UseCases):
    """Balances and commission quotes: nothing is written."""

    async def balances(self, player_id: str) -> Balances:
        async with self._uow() as uow:
            available = await uow.ledger.player_balances(player_id)
            held = await uow.holds.held_by_currency(player_id)
            frozen_reason = await uow.players.frozen_reason(player_id)
        currencies = sorted(set(available) | set(held))
        return Balances(
            tuple(
                CurrencyBalance(
                    currency,
                    available.get(currency, Money.zero(currency)),
                    Money(held.get(currency, 0), currency),
                )
                for currency in currencies
            ),
            frozen=frozen_reason is not None,
        )

    def quote_single_game(
        self, stake: Money, cube: int, win_type: WinType, ratings: tuple[Decimal, Decimal]
    ) -> CommissionQuote:
        now = self._clock.now()
        schedule = schedule_in_force(require_playable_currency(stake.currency, now), now)
        quote = quote_single_game(
            schedule, MoneyGame(self._within(Bound.STAKE, stake)), cube, win_type, ratings
        )
        self._within(Bound.TABLE_EXPOSURE, quote.amount)  # the win sum, stake x cube x result
        return quote

    def quote_match(
        self, stake: Money, length: int, ratings: tuple[Decimal, Decimal]
    ) -> CommissionQuote:
        now = self._clock.now()
        schedule = schedule_in_force(require_playable_currency(stake.currency, now), now)
        return quote_match(schedule, Match(self._within(Bound.STAKE, stake), length), ratings)
