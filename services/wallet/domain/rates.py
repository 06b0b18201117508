"""The operator's planning rates: what a deposit in one currency counts as in another.

A player sets a deposit limit in one currency, and it protects them in every real
currency: a deposit in another currency counts against it at the operator's
planning rates, the ones each commission schedule in force fixes
(``planning_rate_usd``: 1 EUR = 1.17 USD, 1 GBP = 1.33 USD). Those are the house's
rates, not a live quote, so a player can tell in advance what a deposit will
count as. A conversion always rounds up to the next minor unit of the limit's
currency: the player is never let past their own limit by a rounding. Play money
has no cash value and never converts: it counts only against a limit set in play
money. Decimal throughout, never floats.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_CEILING, Decimal, localcontext

from services.wallet.domain.errors import CurrencyMismatch, UnknownSchedule
from services.wallet.domain.money import MINOR_UNIT_EXPONENTS, PLAY, Money
from services.wallet.domain.schedule import CommissionSchedule, schedule_in_force

# Enough digits for any int64 amount times a rate, so nothing is rounded before the end.
_PRECISION = 60


@dataclass(frozen=True, slots=True)
class PlanningRates:
    """USD per major unit of each real currency, as the schedules in force fix them."""

    usd_per_unit: Mapping[str, Decimal]

    def rate(self, currency: str) -> Decimal:
        rate = self.usd_per_unit.get(currency)
        if rate is None:
            raise UnknownSchedule(
                f"no planning rate for {currency} is in force, so a deposit in it cannot be "
                "counted against a limit in another currency; an operator must ship a "
                f"schedule for {currency}"
            )
        return rate

    def counted_as(self, amount: Money, currency: str) -> Money:
        """``amount`` in ``currency`` at these rates, rounded up to a whole minor unit."""
        if amount.currency == currency:
            return amount
        if PLAY in (amount.currency, currency):
            raise CurrencyMismatch(f"play money has no cash value: {amount} is not {currency}")
        with localcontext() as context:
            context.prec = _PRECISION
            usd = amount.to_decimal() * self.rate(amount.currency)
            major = usd / self.rate(currency)
            minor = major.scaleb(MINOR_UNIT_EXPONENTS[currency])
            return Money(int(minor.to_integral_value(rounding=ROUND_CEILING)), currency)

    def describe(self, source: str, target: str) -> str:
        """How ``source`` counts in ``target`` for a person: "1 EUR = 1.17 USD" style."""
        if self.rate(target) == 1:
            return f"1 {source} = {self.rate(source)} {target}"
        if self.rate(source) == 1:
            return f"1 {target} = {self.rate(target)} {source}"
        return f"1 {source} = {self.rate(source)} USD and 1 {target} = {self.rate(target)} USD"


def counts_toward(deposit_currency: str, limit_currency: str) -> bool:
    """Real money counts against limits in real currencies; play money only against play."""
    return (deposit_currency == PLAY) == (limit_currency == PLAY)


def planning_rates(
    at: datetime, schedules: Iterable[CommissionSchedule] | None = None
) -> PlanningRates:
    """The planning rate of every currency with a commission schedule in force at ``at``."""
    pool = None if schedules is None else tuple(schedules)
    rates: dict[str, Decimal] = {}
    for currency in MINOR_UNIT_EXPONENTS:
        if currency == PLAY:
            continue
        try:
            rates[currency] = schedule_in_force(currency, at, pool).planning_rate_usd
        except UnknownSchedule:
            continue  # a currency without a schedule has no rate: converting it refuses
    return PlanningRates(rates)
