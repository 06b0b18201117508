"""The base of the wallet's use cases: a unit of work per call, the clock, the provider, geo."""

from __future__ import annotations

from collections.abc import Callable

from services.kit.clock import Clock
from services.kit.geo_gate import GeoGate
from services.wallet.provider import PaymentProvider
from services.wallet.store.unit_of_work import WalletUnitOfWork

# No geo service: real-money payments are refused (Unavailable), play money goes on.
NO_GEO = GeoGate(None)


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
    ) -> None:
        self._uow = unit_of_work
        self._clock = clock
        self.provider = provider
        self._geo = geo
