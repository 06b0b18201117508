"""The operator's maximum amounts per currency, and money arithmetic that cannot overflow.

Every amount a player or a service asks for (a deposit, a withdrawal, a stake, a
hold) is checked against these bounds before anything is recorded, and every
product of money (stake x cube x 3, stake x cube cap, a commission) goes through
:func:`checked_product`. So no request can push a balance past what PostgreSQL's
``bigint`` holds, and a request above the operator's maximum is refused with
``INVALID_ARGUMENT`` naming the limit, never a 500 or a corrupt ledger.

Bounds are minor units per currency, one variable each:
``TAVLA_MONEY_MAX_<KIND>_<CURRENCY>`` with KIND one of ``DEPOSIT``, ``WITHDRAWAL``,
``STAKE``, ``TABLE_EXPOSURE`` (the most one player can lose at a table: stake x
cube cap x 3 for a money game, the stake for a match; every hold stays under it) and
``ADDED_PRIZE`` (the most house money one call adds to a tournament's prize pool: a
freeroll's pool or an added prize; the wallet and the tournaments service check it).
The wallet, matchmaking and the game read the same variables (the chart sets them
for all three from ``moneyBounds``). A currency without bounds is one the platform
does not play in (the wallet refuses it); its amounts are still kept within int64.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from services.kit.env import Env
from services.kit.errors import InvalidArgument

# PostgreSQL's bigint, where every amount and balance is stored.
INT64_MAX: Final = 2**63 - 1

# The house's largest cube value: a money game's largest loss is stake x 64 x 3.
MAX_CUBE: Final = 64
BACKGAMMON: Final = 3


class AmountOutOfBounds(InvalidArgument):
    """An amount above the operator's maximum, or a product of money past int64."""


class Bound(StrEnum):
    """What an operator's maximum applies to; the value names its environment variable."""

    DEPOSIT = "DEPOSIT"
    WITHDRAWAL = "WITHDRAWAL"
    STAKE = "STAKE"
    TABLE_EXPOSURE = "TABLE_EXPOSURE"
    ADDED_PRIZE = "ADDED_PRIZE"

    def variable(self, currency: str) -> str:
        return f"TAVLA_MONEY_MAX_{self.value}_{currency}"

    def describe(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS: Final = {
    Bound.DEPOSIT: "one deposit",
    Bound.WITHDRAWAL: "one withdrawal",
    Bound.STAKE: "a table's stake",
    Bound.TABLE_EXPOSURE: "what one player can lose at a table (stake x cube cap x 3)",
    Bound.ADDED_PRIZE: "the house money added to a tournament's prize pool",
}


@dataclass(frozen=True, slots=True)
class CurrencyBounds:
    """The largest amounts, in minor units of ``currency``, the platform accepts."""

    currency: str
    deposit: int
    withdrawal: int
    stake: int
    table_exposure: int
    added_prize: int

    def __post_init__(self) -> None:
        for bound in Bound:
            value = self.limit(bound)
            if not 1 <= value <= INT64_MAX:
                raise ValueError(f"{bound.variable(self.currency)}={value} is outside 1..int64")

    def limit(self, bound: Bound) -> int:
        return {
            Bound.DEPOSIT: self.deposit,
            Bound.WITHDRAWAL: self.withdrawal,
            Bound.STAKE: self.stake,
            Bound.TABLE_EXPOSURE: self.table_exposure,
            Bound.ADDED_PRIZE: self.added_prize,
        }[bound]


def _real_money(currency: str) -> CurrencyBounds:
    # 25,000.00 a payment, 5,000.00 a point: a large real site's high-roller tables, with
    # every cube cap allowed at the highest stake (5,000.00 x 64 x 3 = 960,000.00), and
    # 10,000.00 of house money added to one tournament's pool.
    return CurrencyBounds(
        currency,
        deposit=2_500_000,
        withdrawal=2_500_000,
        stake=500_000,
        table_exposure=500_000 * MAX_CUBE * BACKGAMMON,
        added_prize=1_000_000,
    )


# Play money: the free top-up gives at most 10,000.00 PLAY, so no bigger stake is coverable.
DEFAULT_BOUNDS: Final[Mapping[str, CurrencyBounds]] = {
    "USD": _real_money("USD"),
    "EUR": _real_money("EUR"),
    "GBP": _real_money("GBP"),
    "PLAY": CurrencyBounds(
        "PLAY",
        deposit=1_000_000,
        withdrawal=1_000_000,
        stake=1_000_000,
        table_exposure=1_000_000 * MAX_CUBE * BACKGAMMON,
        added_prize=10_000_000,
    ),
}


INT64_LIMIT_NAME: Final = "the largest amount the ledger stores (int64)"


def checked_product(
    amount: int,
    *factors: int,
    what: str,
    limit: int = INT64_MAX,
    limit_name: str = INT64_LIMIT_NAME,
) -> int:
    """``amount`` times every factor, or ``AmountOutOfBounds`` when it passes ``limit``.

    Python's integers never overflow, so the check is exact; it keeps a product that
    PostgreSQL's bigint (or the operator's bound) could not take from going any further.
    """
    product = amount
    for factor in factors:
        product *= factor
    if abs(product) > min(limit, INT64_MAX):
        shown = " x ".join(str(n) for n in (amount, *factors))
        raise AmountOutOfBounds(
            f"{what} is {shown} = {product} minor units, more than {limit_name}: at most {limit}"
        )
    return product


@dataclass(frozen=True, slots=True)
class MoneyBounds:
    """Every currency's bounds; ``require`` refuses an amount above one."""

    by_currency: Mapping[str, CurrencyBounds]

    @classmethod
    def defaults(cls) -> MoneyBounds:
        return cls(dict(DEFAULT_BOUNDS))

    @classmethod
    def from_env(cls, environ: Env | Mapping[str, str] | None = None) -> MoneyBounds:
        """The defaults, each replaced by its ``TAVLA_MONEY_MAX_<KIND>_<CURRENCY>`` if set
        (``environ``: the process environment when None)."""
        env = environ if isinstance(environ, Env) else Env(environ)
        bounds = {}
        for currency, default in DEFAULT_BOUNDS.items():
            values = {
                bound: env.integer(
                    bound.variable(currency), default.limit(bound), low=1, high=INT64_MAX
                )
                for bound in Bound
            }
            bounds[currency] = CurrencyBounds(
                currency,
                deposit=values[Bound.DEPOSIT],
                withdrawal=values[Bound.WITHDRAWAL],
                stake=values[Bound.STAKE],
                table_exposure=values[Bound.TABLE_EXPOSURE],
                added_prize=values[Bound.ADDED_PRIZE],
            )
        return cls(bounds)

    def limit(self, bound: Bound, currency: str) -> int:
        found = self.by_currency.get(currency)
        return INT64_MAX if found is None else found.limit(bound)

    def require(self, bound: Bound, minor_units: int, currency: str) -> int:
        """``minor_units`` if it is within ``bound`` for ``currency``; else refused."""
        limit = self.limit(bound, currency)
        if minor_units > limit:
            raise AmountOutOfBounds(
                f"{bound.describe()} may be at most {limit} minor units of {currency} "
                f"(the operator's {bound.variable(currency)}); asked for {minor_units}"
            )
        return minor_units

    def exposure(self, stake_minor: int, cube_cap: int, currency: str, *, match: bool) -> int:
        """A table's largest loss per player (stake x cube cap x 3, or a match's stake),
        with the stake and that loss each checked against the operator's bounds."""
        self.require(Bound.STAKE, stake_minor, currency)
        if match:
            return self.require(Bound.TABLE_EXPOSURE, stake_minor, currency)
        return checked_product(
            stake_minor,
            cube_cap,
            BACKGAMMON,
            what=f"a {currency} table's largest loss at its cube cap (stake x cube cap x 3)",
            limit=self.limit(Bound.TABLE_EXPOSURE, currency),
            limit_name=f"the operator's {Bound.TABLE_EXPOSURE.variable(currency)}",
        )


__all__ = [
    "DEFAULT_BOUNDS",
    "INT64_LIMIT_NAME",
    "INT64_MAX",
    "AmountOutOfBounds",
    "Bound",
    "CurrencyBounds",
    "MoneyBounds",
    "checked_product",
]
