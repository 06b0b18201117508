"""Responsible gaming: deposit limits, self-exclusion and frozen accounts.

A player sets their own deposit limits per day, week and month (rolling
windows: the last 24 hours, 7 days, 30 days). Lowering a limit takes effect at
once; raising or removing one only after a 24-hour cooling-off, so a decision
made in the heat of a losing streak cannot be acted on straight away.
A limit is set in one currency and protects the player in all of them: a deposit
in another real currency counts against it at the operator's planning rates,
rounded up (``rates.py``), together with every other deposit in the window, so
no currency is ever left unlimited; play money counts only against a limit in
play money. (The other choice, a limit per currency used, would leave each new
currency unlimited until the player thought to set one.)
Self-exclusion blocks deposits and play until it ends and can only be
lengthened. A frozen account (compliance or fraud review) cannot withdraw or
sit down to play; it may still deposit.
Time is always an argument: nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from services.wallet.domain.errors import (
    AccountFrozen,
    AccountNotVerified,
    CurrencyMismatch,
    LimitExceeded,
    SelfExcluded,
)
from services.wallet.domain.money import Money, require_positive
from services.wallet.domain.rates import PlanningRates, counts_toward


class LimitPeriod(StrEnum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


WINDOWS: Mapping[LimitPeriod, timedelta] = {
    LimitPeriod.DAY: timedelta(days=1),
    LimitPeriod.WEEK: timedelta(days=7),
    LimitPeriod.MONTH: timedelta(days=30),
}
COOLING_OFF = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class PendingIncrease:
    """A raised (``amount``) or removed (``None``) limit waiting out the cooling-off."""

    amount: Money | None
    effective_at: datetime


@dataclass(frozen=True, slots=True)
class SelfExclusion:
    """The player keeps out from ``started_at`` until ``ends_at`` (None: indefinitely)."""

    started_at: datetime
    ends_at: datetime | None

    def active_at(self, at: datetime) -> bool:
        return self.started_at <= at and (self.ends_at is None or at < self.ends_at)


@dataclass(frozen=True)
class PlayerLimits:
    """A player's responsible-gaming state for one currency."""

    player_id: str
    currency: str
    deposit_limits: Mapping[LimitPeriod, Money] = field(default_factory=dict)
    pending: Mapping[LimitPeriod, PendingIncrease] = field(default_factory=dict)
    self_exclusion: SelfExclusion | None = None
    frozen_reason: str | None = None

    @property
    def frozen(self) -> bool:
        return self.frozen_reason is not None


@dataclass(frozen=True, slots=True)
class LimitChange:
    """What a limit request did (the LimitChanged event is built from it)."""

    player_id: str
    period: LimitPeriod
    previous: Money | None
    requested: Money | None  # None: remove the limit
    requested_at: datetime
    effective_at: datetime

    @property
    def immediate(self) -> bool:
        return self.effective_at == self.requested_at


@dataclass(frozen=True, slots=True)
class Deposit:
    """A deposit that counts against the limits: confirmed, or requested and not yet failed."""

    at: datetime
    amount: Money


def in_force(limits: PlayerLimits, at: datetime) -> PlayerLimits:
    """The limits as they stand at ``at``: pending increases whose cooling-off has passed apply."""
    due = {period: p for period, p in limits.pending.items() if p.effective_at <= at}
    if not due:
        return limits
    deposit_limits = dict(limits.deposit_limits)
    for period, pending in due.items():
        if pending.amount is None:
            deposit_limits.pop(period, None)
        else:
            deposit_limits[period] = pending.amount
    still_pending = {period: p for period, p in limits.pending.items() if period not in due}
    return replace(limits, deposit_limits=deposit_limits, pending=still_pending)


def change_deposit_limit(
    limits: PlayerLimits, period: LimitPeriod, amount: Money | None, at: datetime
) -> tuple[PlayerLimits, LimitChange]:
    """Set (``amount``) or remove (``None``) a limit: decreases now, increases after 24 hours."""
    if amount is not None:
        require_positive(amount, f"a {period.value} deposit limit")
        _require_currency(limits, amount)
    current = in_force(limits, at)
    previous = current.deposit_limits.get(period)
    pending = {p: v for p, v in current.pending.items() if p is not period}
    if amount is None and previous is None:
        return current, LimitChange(limits.player_id, period, None, None, at, at)
    if amount is not None and (previous is None or amount <= previous):
        # A tighter limit protects the player, so it needs no cooling-off and cancels any raise.
        updated = replace(
            current, deposit_limits={**current.deposit_limits, period: amount}, pending=pending
        )
        return updated, LimitChange(limits.player_id, period, previous, amount, at, at)
    effective_at = at + COOLING_OFF
    pending[period] = PendingIncrease(amount, effective_at)
    updated = replace(current, pending=pending)
    return updated, LimitChange(limits.player_id, period, previous, amount, at, effective_at)


def _require_currency(limits: PlayerLimits, amount: Money) -> None:
    if amount.currency != limits.currency:
        raise CurrencyMismatch(
            f"{limits.player_id}'s limits are in {limits.currency}, not {amount.currency}"
        )


def deposited_within(
    deposits: Sequence[Deposit],
    window: timedelta,
    at: datetime,
    rates: PlanningRates,
    currency: str,
) -> Money:
    """What the deposits in the window count as against a limit in ``currency``.

    Each currency's deposits are summed exactly, then converted at the planning rates
    rounding up (``domain/rates.py``), so the player is never let past their own limit by
    a rounding. Play money counts only against a play-money limit, and the reverse.
    """
    totals: dict[str, int] = {}
    for deposit in deposits:
        if at - window < deposit.at <= at and counts_toward(deposit.amount.currency, currency):
            totals[deposit.amount.currency] = totals.get(deposit.amount.currency, 0) + (
                deposit.amount.amount
            )
    counted = [rates.counted_as(Money(total, code), currency) for code, total in totals.items()]
    return Money(sum(money.amount for money in counted), currency)


def deposit_headroom(
    limits: PlayerLimits, deposits: Sequence[Deposit], rates: PlanningRates, at: datetime
) -> Money | None:
    """How much more the player may deposit now in the limits' currency; None: no limit."""
    current = in_force(limits, at)
    rooms = [
        (limit - deposited_within(deposits, WINDOWS[period], at, rates, limits.currency)).amount
        for period, limit in current.deposit_limits.items()
    ]
    return Money(max(0, min(rooms)), limits.currency) if rooms else None


def _require_not_excluded(limits: PlayerLimits, at: datetime, action: str) -> None:
    exclusion = limits.self_exclusion
    if exclusion is not None and exclusion.active_at(at):
        until = "indefinitely" if exclusion.ends_at is None else f"until {exclusion.ends_at}"
        raise SelfExcluded(f"{limits.player_id} is self-excluded {until} and cannot {action}")


def check_deposit(
    limits: PlayerLimits,
    amount: Money,
    deposits: Sequence[Deposit],
    rates: PlanningRates,
    at: datetime,
) -> None:
    """Refuse a deposit while self-excluded or above any of the player's limits in one currency.

    The deposit may be in any currency: it counts against ``limits`` (one currency's) with
    the player's other ``deposits`` in the window, all at the planning ``rates``.
    """
    require_positive(amount, "a deposit")
    _require_not_excluded(limits, at, "deposit")
    if not counts_toward(amount.currency, limits.currency):
        return
    current = in_force(limits, at)
    with_this = [*deposits, Deposit(at, amount)]
    for period, limit in current.deposit_limits.items():
        total = deposited_within(with_this, WINDOWS[period], at, rates, limits.currency)
        if total > limit:
            room = deposit_headroom(current, deposits, rates, at)
            raise LimitExceeded(
                f"a deposit of {amount}{_counted_as(amount, limits.currency, rates)} would "
                f"bring your deposits in the last {_window_name(period)} to {total}, above "
                f"your {period.value} limit of {limit}; you can deposit up to {room} now"
            )


def check_deposit_everywhere(
    every_limit: Sequence[PlayerLimits],
    amount: Money,
    deposits: Sequence[Deposit],
    rates: PlanningRates,
    at: datetime,
) -> None:
    """Refuse a deposit that any of the player's limits, in whatever currency, refuses.

    ``every_limit`` holds the player's limits in the deposit's currency and in each other
    currency they set one in: a limit protects the player whatever they deposit in.
    """
    for limits in every_limit:
        check_deposit(limits, amount, deposits, rates, at)


def _counted_as(amount: Money, currency: str, rates: PlanningRates) -> str:
    if amount.currency == currency:
        return ""
    counted = rates.counted_as(amount, currency)
    rate = rates.describe(amount.currency, currency)
    return f" (counted as {counted} at the operator's rate, {rate})"


def _window_name(period: LimitPeriod) -> str:
    return {LimitPeriod.DAY: "24 hours", LimitPeriod.WEEK: "7 days"}.get(period, "30 days")


def check_play(limits: PlayerLimits, at: datetime) -> None:
    """Refuse a seat at a table while self-excluded or frozen."""
    _require_not_excluded(limits, at, "play")
    if limits.frozen:
        # The wallet's rules name only withdrawals; the AccountFrozen event promises no play either.
        raise AccountFrozen(
            f"{limits.player_id}'s account is frozen ({limits.frozen_reason}); "
            "play resumes when support lifts the freeze"
        )


def check_withdrawal(limits: PlayerLimits, verified: bool) -> None:
    """Refuse a withdrawal from a frozen account or to an unverified one."""
    if limits.frozen:
        raise AccountFrozen(
            f"{limits.player_id}'s account is frozen ({limits.frozen_reason}); "
            "withdrawals resume when support lifts the freeze"
        )
    if not verified:
        raise AccountNotVerified(
            f"{limits.player_id} must complete identity verification before withdrawing"
        )


def self_exclude(limits: PlayerLimits, at: datetime, length: timedelta | None) -> PlayerLimits:
    """Start or lengthen a self-exclusion; an existing one is never shortened."""
    ends_at = None if length is None else at + length
    current = limits.self_exclusion
    if current is not None and current.active_at(at):
        if current.ends_at is None or (ends_at is not None and ends_at <= current.ends_at):
            return limits
        return replace(limits, self_exclusion=SelfExclusion(current.started_at, ends_at))
    return replace(limits, self_exclusion=SelfExclusion(at, ends_at))


def freeze(limits: PlayerLimits, reason: str) -> PlayerLimits:
    return replace(limits, frozen_reason=reason or "under review")


def unfreeze(limits: PlayerLimits) -> PlayerLimits:
    return replace(limits, frozen_reason=None)
