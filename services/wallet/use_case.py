"""The base of the wallet's use cases: a unit of work per call, the clock, the provider, geo,
and the operator's money bounds."""

from __future__ import annotations

from collections.abc import Callable

from services.kit.clock import Clock
from services.kit.geo_gate import GeoGate
from services.kit.money_bounds import Bound, MoneyBounds
from services.wallet.domain.money import Money
from services.wallet.provider import PaymentProvider
from services.wallet.store.unit_of_work import WalletUnitOfWork

# No geo service: real-money payments are refused (Unavailable), play money goes on.
NO_GEO = GeoGate(None)
# The documented defaults; ``main`` reads the operator's TAVLA_MONEY_MAX_* instead.
DEFAULT_BOUNDS = MoneyBounds.defaults()


class UseCases:
    """What every group of use cases works with.

    :class:`~services.wallet.service.WalletService` gathers the groups.
    """

    def __init__(
        self,
        unit_of_work: Callable[[], WalletUnitOfWork],
        *,
        clock: Clock,
        provider: PaymentProvider,
        geo: GeoGate = NO_GEO,
        bounds: MoneyBounds = DEFAULT_BOUNDS,
    ) -> None:
        self._uow = unit_of_work
        self._clock = clock
        self.provider = provider
        self._geo = geo
        self._bounds = bounds

    def _within(self, bound: Bound, amount: Money) -> Money:
        """``amount`` if the operator's ``bound`` allows it, else INVALID_ARGUMENT naming it
        (asked before anything is recorded or anyone is called)."""
        self._bounds.require(bound, amount.amount, amount.currency)
        return amount
