"""Responsible gaming: deposit limits, self-exclusion and frozen accounts.

A player sets their own deposit limits per day, week and month (rolling
windows: the last 24 hours, 7 days, 30 days). Lowering a limit takes effect at
once; raising or removing one only after a 24-hour cooling-off, so a decision
made in the heat of a losing streak cannot be acted on straight away.
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


def deposited_within(deposits: Sequence[Deposit], window: timedelta, at: datetime) -> int:
    return sum(d.amount.amount for d in deposits if at - window < d.at <= at)


def deposit_headroom(
    limits: PlayerLimits, deposits: Sequence[Deposit], at: datetime
) -> Money | None:
    """How much more the player may deposit now; None when no limit is set."""
    current = in_force(limits, at)
    rooms = [
        limit.amount - deposited_within(deposits, WINDOWS[period], at)
        for period, limit in current.deposit_limits.items()
    ]
    return Money(max(0, min(rooms)), limits.currency) if rooms else None


def _require_not_excluded(limits: PlayerLimits, at: datetime, action: str) -> None:
    exclusion = limits.self_exclusion
    if exclusion is not None and exclusion.active_at(at):
        until = "indefinitely" if exclusion.ends_at is None else f"until {exclusion.ends_at}"
        raise SelfExcluded(f"{limits.player_id} is self-excluded {until} and cannot {action}")


def check_deposit(
    limits: PlayerLimits, amount: Money, deposits: Sequence[Deposit], at: datetime
) -> None:
    """Refuse a deposit while self-excluded or above any of the player's limits."""
    require_positive(amount, "a deposit")
    _require_currency(limits, amount)
    _require_not_excluded(limits, at, "deposit")
    current = in_force(limits, at)
    for period, limit in current.deposit_limits.items():
        already = Money(deposited_within(deposits, WINDOWS[period], at), limits.currency)
        if already + amount > limit:
            room = deposit_headroom(current, deposits, at)
            raise LimitExceeded(
                f"a deposit of {amount} would bring your deposits in the last "
                f"{_window_name(period)} to {already + amount}, above your {period.value} "
                f"limit of {limit}; you can deposit up to {room} now"
            )


def _window_name(period: LimitPeriod) -> str:
    return {LimitPeriod.DAY: "24 hours", LimitPeriod.WEEK: "7 days"}.get(period, "30 days")


def check_play(limits: PlayerLimits, at: datetime) -> None:
    """Refuse a seat at a table while self-excluded or frozen."""
    _require_not_excluded(limits, at, "play")
    if limits.frozen:
        # Issue 5 only names withdrawals; the AccountFrozen event promises no play either.
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
