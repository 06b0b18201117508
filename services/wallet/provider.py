"""The payment-provider interface, and the sandbox provider used locally and in tests.

A provider takes a deposit or withdrawal the wallet has recorded (``submit``),
answers whether a payout destination is verified, and later reports the outcome
through a callback (``WalletService.provider_callback``), asynchronously and
possibly more than once, as card acquirers and e-wallets do. Asked about one
payment (``status``), it says how it stands, for reconciliation. The real
adapter is :mod:`services.wallet.http_provider`; which one runs is chosen by
:mod:`services.wallet.provider_config`.

The sandbox is a test double: it moves play money (``PLAY``) only, unless it is
built with ``real_money_unsafe`` (``TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE=true``,
set by ``tavla dev`` and the tests, never by default), because otherwise any
player could deposit real currency that nobody ever paid. It behaves like a
real provider: it confirms a payment only after a
delay measured on the injectable clock, fails the ones its configuration says
to fail (payment methods containing ``decline``, or a deterministic fraction of
all payments), can send every callback twice, and refuses payouts to methods
starting with ``unverified``. Like a real provider it confirms a payment with the
instrument's fingerprint (:meth:`SandboxProvider.fingerprint`): derived from the test
instrument the request names (``card-shared-1``, ``iban-2``...), the same for every
payment with it, so tests can make two accounts pay with one card. The plain method
``sandbox`` (the dev stack's and the web client's) names no instrument and has no
fingerprint: otherwise every dev player would share one. It keeps no state of its
own: what it still owes a callback for is what the wallet still has waiting on it, so
a restart loses no confirmation (a real provider retries undelivered webhooks the same way).
A payment it was handed sends its callback as soon as the delay has passed (the
submission sets a timer); every ``TAVLA_WALLET_SANDBOX_POLL_SECONDS`` it also looks for
the others (another replica's, from before a restart, failed callbacks to retry).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Protocol

from prometheus_client import Counter

from services.kit.clock import Clock
from services.kit.config import ConfigError, Env
from services.kit.logging import get_logger
from services.kit.retry import Backoff, is_transient
from services.wallet.domain.errors import CurrencyNotSupported, WalletError
from services.wallet.domain.money import PLAY
from services.wallet.domain.payments import CallbackOutcome, Payment, ProviderCallback

log = get_logger(__name__)

SANDBOX_DELIVERIES_FAILED = Counter(
    "tavla_wallet_sandbox_deliveries_failed",
    "Sandbox provider callbacks the wallet failed to apply (each is retried with back-off; "
    "the other payments' callbacks go on).",
)


@dataclass(frozen=True, slots=True)
class Submission:
    """The provider's answer to a new payment: its reference, and a page for the player."""

    reference: str
    redirect_url: str = ""


@dataclass(frozen=True, slots=True)
class WaitingPayment:
    """A payment the wallet still waits on the provider for."""

    payment: Payment
    method: str
    created_at: datetime


class PaymentProvider(Protocol):
    name: str

    def check_currency(self, currency: str) -> None:
        """Raise :class:`CurrencyNotSupported` unless this provider moves ``currency``."""
        ...

    async def submit(self, payment: Payment, method: str) -> Submission:
        """Hand a recorded payment to the provider; the outcome arrives by callback."""
        ...

    async def payout_verified(self, player_id: str, payout_method: str) -> bool:
        """Whether the provider has verified this payout destination for this player."""
        ...

    async def status(self, waiting: WaitingPayment) -> ProviderCallback | None:
        """The provider's word on one payment now: its outcome, or None while pending."""
        ...


REAL_MONEY_FLAG = "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE"
# Says, by name, that this process is not production (tavla dev, the tests, a chart with
# notProduction: true); without it the flag above is refused at start.
NOT_PRODUCTION_FLAG = "TAVLA_NOT_PRODUCTION"


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    delay: timedelta = timedelta(seconds=2)
    failure_rate: Decimal = Decimal(0)
    duplicate_callbacks: bool = False
    poll_seconds: float = 0.5
    # Real currencies through a provider that confirms everything: dev stacks and tests only.
    real_money_unsafe: bool = False

    @classmethod
    def from_env(cls, env: Env | None = None) -> SandboxConfig:
        env = env or Env()
        name = "TAVLA_WALLET_SANDBOX_FAILURE_RATE"
        raw = env.text(name, "0")
        try:
            rate = Decimal(raw)
        except InvalidOperation:
            raise ConfigError(f"{name}={raw!r} is not a number") from None
        if not Decimal(0) <= rate <= Decimal(1):
            raise ConfigError(f"{name}={raw} is outside 0..1")
        return cls(
            delay=timedelta(
                seconds=env.number("TAVLA_WALLET_SANDBOX_DELAY_SECONDS", 2.0, low=0, high=3600)
            ),
            failure_rate=rate,
            duplicate_callbacks=env.flag("TAVLA_WALLET_SANDBOX_DUPLICATE_CALLBACKS", False),
            poll_seconds=env.number("TAVLA_WALLET_SANDBOX_POLL_SECONDS", 0.5, low=0.01, high=60),
            real_money_unsafe=_real_money_unsafe(env),
        )


def _real_money_unsafe(env: Env) -> bool:
    """The loud flag, refused in a process not told by name that it is not production."""
    unsafe = env.flag(REAL_MONEY_FLAG, False)
    if unsafe and not env.flag(NOT_PRODUCTION_FLAG, False):
        raise ConfigError(
            f"{REAL_MONEY_FLAG}=true lets the sandbox confirm real-currency payments nobody "
            f"paid; it is refused unless {NOT_PRODUCTION_FLAG}=true says this is not "
            "production (tavla dev and the tests set both; a real stack sets neither)"
        )
    return unsafe


# The method that names no test instrument (the dev stack's and the web client's default).
ANONYMOUS_METHOD = "sandbox"

Waiting = Callable[[datetime], Awaitable[Sequence[WaitingPayment]]]
Deliver = Callable[[ProviderCallback], Awaitable[object]]


class SandboxProvider:
    """A provider that confirms after a delay, fails on demand and repeats itself."""

    name = "sandbox"

    def __init__(self, config: SandboxConfig, clock: Clock) -> None:
        self.config = config
        self._clock = clock
        # A payment whose callback fails waits longer each time; the others do not wait.
        self._backoff = Backoff(base_seconds=config.poll_seconds, cap_seconds=60.0)
        # Set when a payment this process submitted comes due: its callback goes out then,
        # not at the next poll (which remains for payments recorded elsewhere, another
        # replica's or before a restart, and for retries after a failed callback).
        self._due = asyncio.Event()

    def check_currency(self, currency: str) -> None:
        if currency != PLAY and not self.config.real_money_unsafe:
            raise CurrencyNotSupported(
                f"the sandbox payment provider moves play money (PLAY) only, not {currency}: "
                "real money needs a real payment provider (TAVLA_WALLET_PAYMENT_PROVIDER=http); "
                f"{REAL_MONEY_FLAG}=true allows it on a stack that is not production"
            )

    async def submit(self, payment: Payment, method: str) -> Submission:
        self.check_currency(payment.amount.currency)
        # The payment is recorded (committed) before it is submitted: it is found once due.
        asyncio.get_running_loop().call_later(self.config.delay.total_seconds(), self._due.set)
        return Submission(reference=self.reference(payment))

    async def payout_verified(self, player_id: str, payout_method: str) -> bool:
        # A naming convention stands in for a provider's check; it is reached only with
        # real money allowed (withdrawals are never PLAY), i.e. never in production.
        return self.config.real_money_unsafe and not payout_method.startswith("unverified")

    async def status(self, waiting: WaitingPayment) -> ProviderCallback | None:
        if self._clock.now() - waiting.created_at < self.config.delay:
            return None
        return self.outcome(waiting)

    @staticmethod
    def reference(payment: Payment) -> str:
        return f"sbx-{hashlib.sha256(payment.id.encode()).hexdigest()[:16]}"

    @staticmethod
    def fingerprint(method: str) -> str | None:
        """The test instrument's fingerprint: a hash of the method the request named, so the
        same test card always has the same one (base32: letters and a few digits, never the
        shape of a card number). None for the anonymous method."""
        if method == ANONYMOUS_METHOD:
            return None
        digest = hashlib.sha256(f"tavla sandbox instrument\n{method}".encode()).digest()
        return "sbxfp_" + base64.b32encode(digest[:15]).decode().lower()

    def outcome(self, waiting: WaitingPayment) -> ProviderCallback:
        payment = waiting.payment
        reference = self.reference(payment)
        if payment.amount.currency != PLAY and not self.config.real_money_unsafe:
            # Recorded before the sandbox was kept to play money: nobody paid it, so it
            # fails (a withdrawal's money goes back) instead of creating money.
            reason = "the sandbox payment provider moves play money only; nothing was paid"
            return ProviderCallback(payment.id, CallbackOutcome.FAILED, reference, reason)
        if "decline" in waiting.method:
            reason = "the card issuer declined the payment; try another payment method"
            return ProviderCallback(payment.id, CallbackOutcome.FAILED, reference, reason)
        if self._unlucky(payment.id):
            reason = "the provider could not complete the payment; please try again later"
            return ProviderCallback(payment.id, CallbackOutcome.FAILED, reference, reason)
        fingerprint = self.fingerprint(waiting.method)
        return ProviderCallback(
            payment.id, CallbackOutcome.CONFIRMED, reference, instrument_fingerprint=fingerprint
        )

    def _unlucky(self, payment_id: str) -> bool:
        # Deterministic per payment, so a retried callback says the same thing.
        digest = int(hashlib.sha256(payment_id.encode()).hexdigest()[:8], 16)
        return Decimal(digest) / Decimal(0xFFFFFFFF) < self.config.failure_rate

    async def deliver_due(self, waiting: Waiting, deliver: Deliver) -> int:
        """Send the callbacks of every payment older than the delay; returns how many were due.

        One payment's failure is its own: it is logged, counted in
        ``tavla_wallet_sandbox_deliveries_failed_total`` and retried after a growing
        back-off, while the others are delivered. Only the database being away
        (:func:`~services.kit.retry.is_transient`) stops the round.
        """
        due = await waiting(self._clock.now() - self.config.delay)
        self._backoff.forget_all_but({item.payment.id for item in due})
        for item in due:
            if not self._backoff.due(item.payment.id):
                continue
            try:
                await self._deliver(item, deliver)
            except Exception as error:
                if is_transient(error):
                    raise
                failures = self._backoff.failed(item.payment.id)
                SANDBOX_DELIVERIES_FAILED.inc()
                log.error(
                    "sandbox_callback_failed",
                    payment=item.payment.id,
                    failures=failures,
                    error=repr(error),
                )
                continue
            self._backoff.succeeded(item.payment.id)
        return len(due)

    async def _deliver(self, item: WaitingPayment, deliver: Deliver) -> None:
        """Send the payment's callback (twice when duplicates are asked for). The first
        refused leaves the payment waiting: a failure of its own, retried with back-off
        (an amount the books cannot take, for one). A refused duplicate is the wallet
        doing its job."""
        callback = self.outcome(item)
        await deliver(callback)
        if self.config.duplicate_callbacks:
            try:
                await deliver(callback)
            except WalletError as error:
                log.warning("sandbox_callback_refused", payment=item.payment.id, error=str(error))

    async def run(self, waiting: Waiting, deliver: Deliver) -> None:
        """The provider's webhook sender: a loop the service runs in the background."""
        while True:
            try:
                await self.deliver_due(waiting, deliver)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # database away: try again on the next tick
                log.warning("sandbox_delivery_failed", error=repr(error))
            await self._next_round()

    async def _next_round(self) -> None:
        """Wait for the poll interval, or less when a submitted payment comes due."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._due.wait(), timeout=self.config.poll_seconds)
        self._due.clear()  # before the round: a payment due meanwhile sets it again
