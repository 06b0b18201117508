"""Money: an integer number of minor units of one currency, and its rounding.

Amounts never pass through floating point. Decimal appears only for rates and
for parsing/printing human amounts such as ``"10.50"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Final

from services.kit.money_bounds import INT64_MAX
from services.wallet.domain.errors import CurrencyMismatch, InvalidAmount, UnknownCurrency

PLAY: Final = "PLAY"

# Minor-unit exponents of the currencies the wallet holds; PLAY mirrors USD.
MINOR_UNIT_EXPONENTS: Final[dict[str, int]] = {"USD": 2, "EUR": 2, "GBP": 2, PLAY: 2}


def require_known_currency(currency: str) -> str:
    if currency not in MINOR_UNIT_EXPONENTS:
        known = ", ".join(sorted(MINOR_UNIT_EXPONENTS))
        raise UnknownCurrency(f"currency {currency!r} is not held by the wallet (known: {known})")
    return currency


def round_half_up(value: Decimal) -> int:
    """Round to a whole number of minor units, halves away from zero."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


@dataclass(frozen=True, slots=True)
class Money:
    """``amount`` minor units of ``currency``; may be negative for net amounts."""

    amount: int
    currency: str

    def __post_init__(self) -> None:
        # bool is an int subclass and float sneaks in from JSON; both are bugs here.
        if type(self.amount) is not int:
            raise InvalidAmount(
                f"amount must be an integer number of minor units, got {self.amount!r}"
            )
        # Every sum and product of money makes a Money: none can pass what the ledger stores.
        if abs(self.amount) > INT64_MAX:
            raise InvalidAmount(
                f"{self.amount} minor units is more than the ledger stores (at most {INT64_MAX})"
            )
        require_known_currency(self.currency)

    @classmethod
    def zero(cls, currency: str) -> Money:
        return cls(0, currency)

    @classmethod
    def parse(cls, text: str, currency: str) -> Money:
        """Parse a decimal string in major units (``"10.50"``) exactly, or refuse it."""
        require_known_currency(currency)
        try:
            value = Decimal(text.strip())
        except InvalidOperation:
            raise InvalidAmount(f"{text!r} is not a decimal amount such as 10.50") from None
        if not value.is_finite():
            raise InvalidAmount(f"{text!r} is not a finite amount")
        minor = value.scaleb(MINOR_UNIT_EXPONENTS[currency])
        if minor != minor.to_integral_value():
            places = MINOR_UNIT_EXPONENTS[currency]
            raise InvalidAmount(f"{text!r} has more than {places} decimal places for {currency}")
        return cls(int(minor), currency)

    def to_decimal(self) -> Decimal:
        """The amount in major units, with exactly the currency's decimal places."""
        places = MINOR_UNIT_EXPONENTS[self.currency]
        return Decimal(self.amount).scaleb(-places).quantize(Decimal(1).scaleb(-places))

    def __str__(self) -> str:
        return f"{self.to_decimal()} {self.currency}"

    def _same_currency(self, other: Money) -> None:
        if other.currency != self.currency:
            raise CurrencyMismatch(f"cannot combine {self} with {other}: different currencies")

    def __add__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money(self.amount + other.amount, self.currency)

    def __sub__(self, other: Money) -> Money:
        self._same_currency(other)
        return Money(self.amount - other.amount, self.currency)

    def __neg__(self) -> Money:
        return Money(-self.amount, self.currency)

    def __lt__(self, other: Money) -> bool:
        self._same_currency(other)
        return self.amount < other.amount

    def __le__(self, other: Money) -> bool:
        self._same_currency(other)
        return self.amount <= other.amount

    def __gt__(self, other: Money) -> bool:
        self._same_currency(other)
        return self.amount > other.amount

    def __ge__(self, other: Money) -> bool:
        self._same_currency(other)
        return self.amount >= other.amount

    def times(self, factor: int) -> Money:
        """The amount ``factor`` times over; past int64 it is refused (``InvalidAmount``)."""
        return Money(self.amount * factor, self.currency)

    def is_positive(self) -> bool:
        return self.amount > 0


def require_positive(money: Money, what: str) -> Money:
    if not money.is_positive():
        raise InvalidAmount(f"{what} must be more than zero, got {money}")
    return money
