"""The account model and its rules: registering, login lockout, self-exclusion. Pure: no I/O,
no clock (the time is always an argument). Residence and age: ``eligibility.py``."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from enum import Enum

from services.accounts.eligibility import check_date_of_birth, check_residence, residence_code
from services.accounts.screen_names import check_screen_name
from services.kit.errors import FailedPrecondition, InvalidArgument

TOPIC = "tavla.accounts.v1"
PASSWORD_MIN, PASSWORD_MAX = 10, 256
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
# NJAC 13:69O-1.4(i): lock the account after three consecutive failed login attempts.
FAILED_LOGINS_BEFORE_LOCK = 3


class AccountStatus(Enum):
    ACTIVE = "active"
    SELF_EXCLUDED = "self_excluded"
    FROZEN = "frozen"
    CLOSED = "closed"


@dataclass(frozen=True)
class Registration:
    """A validated request to open an account (``today``: the service clock's UTC date)."""

    email: str
    display_name: str  # the screen name (``screen_names.py``)
    residence: str  # ISO 3166 code: "MT", "US-NJ"
    country_code: str  # the residence's country
    date_of_birth: date

    @classmethod
    def parse(
        cls, email: str, display_name: str, residence: str, date_of_birth: str, today: date
    ) -> Registration:
        place = check_residence(residence)
        return cls(
            email=normalise_email(email),
            display_name=check_screen_name(display_name),
            residence=residence_code(place),
            country_code=place.country,
            date_of_birth=check_date_of_birth(date_of_birth, today),
        )


@dataclass(frozen=True)
class Account:
    account_id: str
    email: str
    display_name: str
    country_code: str
    status: AccountStatus
    password_hash: str
    created_at: datetime
    self_excluded_until: datetime | None = None
    # Failed logins since the last successful one (or the last lock).
    failed_logins: int = 0
    locked_until: datetime | None = None
    # Declared at registration; empty/None for accounts opened before they were asked.
    residence: str = ""
    date_of_birth: date | None = None
    # The display name once chosen under the screen-name rules; empty for an account
    # opened before them, until its owner chooses one (once: :meth:`choose_screen_name`).
    screen_name: str = ""

    def choose_screen_name(self, name: str) -> Account:
        """The account with its screen name, a checked name (``check_screen_name``); a
        name is chosen once (a change is support's)."""
        if self.screen_name:
            raise FailedPrecondition(
                f"your screen name is {self.screen_name!r} already; it is chosen once: "
                "contact support to change it"
            )
        return replace(self, display_name=name, screen_name=name)

    def lock_ending(self, now: datetime) -> datetime | None:
        """When the lock in force at `now` (after failed logins) ends; None if there is none."""
        if self.locked_until is not None and now < self.locked_until:
            return self.locked_until
        return None

    def locked_at(self, now: datetime) -> bool:
        """Whether logins are refused now because of failed attempts."""
        return self.lock_ending(now) is not None

    def after_failed_login(self, now: datetime, lock_for: timedelta) -> Account:
        """Count a wrong password; the third in a row locks the account for `lock_for`.

        The count starts again after a lock, so each further run of three wrong
        passwords locks it again.
        """
        failures = self.failed_logins + 1
        if failures >= FAILED_LOGINS_BEFORE_LOCK:
            return replace(self, failed_logins=0, locked_until=now + lock_for)
        return replace(self, failed_logins=failures)

    def after_successful_login(self) -> Account:
        return replace(self, failed_logins=0, locked_until=None)

    def status_at(self, now: datetime) -> AccountStatus:
        """Self-exclusion ends by itself when its period is over."""
        if (
            self.status is AccountStatus.SELF_EXCLUDED
            and self.self_excluded_until is not None
            and self.self_excluded_until <= now
        ):
            return AccountStatus.ACTIVE
        return self.status

    def suspended(self) -> Account:
        """A sanction: FROZEN (logins refused) until support lifts it; a closed account
        stays closed."""
        if self.status is AccountStatus.CLOSED:
            return self
        return replace(self, status=AccountStatus.FROZEN)

    def terminated(self) -> Account:
        """A sanction: CLOSED for good (the seed: "prohibited from any future membership")."""
        return replace(self, status=AccountStatus.CLOSED)

    def self_exclude(self, until: datetime, now: datetime) -> Account:
        if until <= now:
            raise InvalidArgument("self-exclusion must end in the future")
        if self.status_at(now) in (AccountStatus.FROZEN, AccountStatus.CLOSED):
            raise FailedPrecondition(f"the account is {self.status.value}; contact support")
        excluded_now = self.status_at(now) is AccountStatus.SELF_EXCLUDED
        current = self.self_excluded_until if excluded_now else None
        if current is not None and until < current:
            # Player protection: an exclusion can be lengthened, never shortened.
            raise FailedPrecondition(
                f"you are self-excluded until {current.isoformat()}; it cannot be shortened"
            )
        return replace(self, status=AccountStatus.SELF_EXCLUDED, self_excluded_until=until)


def normalise_email(raw: str) -> str:
    email = raw.strip().lower()
    if not _EMAIL.match(email) or len(email) > 254:
        raise InvalidArgument(f"{raw!r} is not a valid email address")
    return email


def check_password(password: str) -> None:
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise InvalidArgument(
            f"password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters long"
        )
