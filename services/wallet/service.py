"""Wallet use cases: each opens a transaction, loads and locks rows, applies the domain,
saves, and records its events in the outbox in the same transaction.

Every money mutation is idempotent (ids derive from the client's idempotency key
or from the game being settled), balanced (the domain's ``post`` refuses
anything else) and audited (the transfers table is the trail). Nothing here
decides a rule: the rules live in ``services.wallet.domain``.

The use cases live one group per module: ``queries`` (balances, commission
quotes), ``payments`` (deposits, withdrawals, provider callbacks), ``play_money``
(the free top-up), ``holds``,
``limits`` (deposit limits, self-exclusion, freezes), ``pools`` (a tournament's
fees and prizes from its holds) and ``settlement`` (the
:class:`~services.wallet.settlement.Settler`, run inside a consumer's
transaction); ``posting`` is how each of them moves money. This module puts the
API's groups together as :class:`WalletService`.
"""

from __future__ import annotations

from services.wallet.holds import HoldUseCases
from services.wallet.limits import LimitUseCases
from services.wallet.payments import PaymentUseCases
from services.wallet.play_money import PlayMoneyUseCases
from services.wallet.pools import PoolUseCases
from services.wallet.queries import WalletQueries


class WalletService(
    WalletQueries, PaymentUseCases, PlayMoneyUseCases, LimitUseCases, HoldUseCases, PoolUseCases
):
    """The wallet's use cases behind its gRPC API, one group per module."""
