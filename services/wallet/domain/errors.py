"""Domain errors of the wallet.

Every rule the wallet refuses to break raises a subclass of ``WalletError``
whose message tells a person what went wrong and what they can do about it.
``reason`` is a stable machine-readable code (for gRPC ``ErrorInfo`` and
metrics) so callers never parse messages.
"""

from __future__ import annotations

from typing import ClassVar


class WalletError(Exception):
    """Base of every wallet rule violation."""

    reason: ClassVar[str] = "WALLET_ERROR"


class InvalidAmount(WalletError):
    """An amount that is not a whole number of minor units, or not positive where required."""

    reason = "INVALID_AMOUNT"


class UnknownCurrency(WalletError):
    """A currency code the wallet does not hold or has no schedule for."""

    reason = "UNKNOWN_CURRENCY"


class CurrencyMismatch(WalletError):
    """Two amounts or accounts in different currencies were combined."""

    reason = "CURRENCY_MISMATCH"


class InsufficientFunds(WalletError):
    """A player's balance cannot cover a debit or a hold."""

    reason = "INSUFFICIENT_FUNDS"


class IdempotencyConflict(WalletError):
    """An idempotency id was reused for a request with different content."""

    reason = "IDEMPOTENCY_CONFLICT"


class UnknownAccount(WalletError):
    """A transfer names an account that does not exist."""

    reason = "UNKNOWN_ACCOUNT"


class InvalidTransfer(WalletError):
    """A transfer that breaks a posting rule (wrong accounts for its code, self-transfer...)."""

    reason = "INVALID_TRANSFER"


class LimitExceeded(WalletError):
    """A deposit above the player's own deposit limit."""

    reason = "LIMIT_EXCEEDED"


class SelfExcluded(WalletError):
    """A self-excluded player tried to deposit or play."""

    reason = "SELF_EXCLUDED"


class AccountFrozen(WalletError):
    """A frozen account tried to withdraw."""

    reason = "ACCOUNT_FROZEN"


class AccountNotVerified(WalletError):
    """A withdrawal to an account whose identity or payout method is not verified."""

    reason = "ACCOUNT_NOT_VERIFIED"


class InvalidHoldState(WalletError):
    """A hold operation that its current state does not allow (raise a posted hold...)."""

    reason = "INVALID_HOLD_STATE"


class StakeNotHeld(WalletError):
    """A seat's stake is not held as a real-money game needs it (missing, spent, too small...)."""

    reason = "STAKE_NOT_HELD"


class UnbackedSettlement(WalletError):
    """A real-money result asking for money not held for its game: a seat without a hold
    claimed for it (ClaimHolds), or a loss larger than the hold."""

    reason = "UNBACKED_SETTLEMENT"


class InvalidSettlement(WalletError):
    """A game or match result that cannot be settled as given."""

    reason = "INVALID_SETTLEMENT"


class InvalidSchedule(WalletError):
    """A commission schedule file that does not parse or breaks a schedule rule."""

    reason = "INVALID_SCHEDULE"


class UnknownSchedule(WalletError):
    """No commission schedule with that version, or none in force at that time."""

    reason = "UNKNOWN_SCHEDULE"


class InvalidPaymentTransition(WalletError):
    """A provider callback that contradicts what the payment already is."""

    reason = "INVALID_PAYMENT_TRANSITION"


class PlayMoneyTopUpRefused(WalletError):
    """A free play-money top-up for a player who already has the ceiling, or not in PLAY."""

    reason = "PLAY_MONEY_TOP_UP_REFUSED"


class PlayMoneyTopUpTooSoon(PlayMoneyTopUpRefused):
    """A free play-money top-up sooner than the interval after the last one."""

    reason = "PLAY_MONEY_TOP_UP_TOO_SOON"


class CurrencyNotSupported(WalletError):
    """The configured payment provider does not move this currency (the sandbox: real money)."""

    reason = "CURRENCY_NOT_SUPPORTED"


class OutOfOrderCallback(WalletError):
    """A provider event older than one already applied to the same payment."""

    reason = "OUT_OF_ORDER_CALLBACK"


class UnknownPayment(WalletError):
    """The provider called back about a payment the wallet never recorded."""

    reason = "UNKNOWN_PAYMENT"


class InvalidInstrumentFingerprint(WalletError):
    """A provider's instrument fingerprint that is not an opaque token (or is a card number)."""

    reason = "INVALID_INSTRUMENT_FINGERPRINT"
