"""The account model and the rules for registering one. Pure: no I/O, no clock."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from enum import Enum

from services.kit.errors import FailedPrecondition, InvalidArgument

TOPIC = "tavla.accounts.v1"
PASSWORD_MIN, PASSWORD_MAX = 10, 256
_EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]{2,}$")
_DISPLAY_NAME = re.compile(r"^[A-Za-z0-9_.-]{3,24}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")


class AccountStatus(Enum):
    ACTIVE = "active"
    SELF_EXCLUDED = "self_excluded"
    FROZEN = "frozen"
    CLOSED = "closed"


@dataclass(frozen=True)
class Registration:
    """A validated request to open an account."""

    email: str
    display_name: str
    country_code: str

    @classmethod
    def parse(cls, email: str, display_name: str, country_code: str) -> Registration:
        return cls(
            email=normalise_email(email),
            display_name=check_display_name(display_name),
            country_code=check_country_code(country_code),
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

    def status_at(self, now: datetime) -> AccountStatus:
        """Self-exclusion ends by itself when its period is over."""
        if (
            self.status is AccountStatus.SELF_EXCLUDED
            and self.self_excluded_until is not None
            and self.self_excluded_until <= now
        ):
            return AccountStatus.ACTIVE
        return self.status

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


def check_display_name(raw: str) -> str:
    name = raw.strip()
    if not _DISPLAY_NAME.match(name):
        raise InvalidArgument(
            "display name must be 3 to 24 characters: letters, digits, '.', '_' or '-'"
        )
    return name


def check_country_code(raw: str) -> str:
    code = raw.strip().upper()
    if not _COUNTRY.match(code):
        raise InvalidArgument(f"country code {raw!r} must be two letters (ISO 3166-1 alpha-2)")
    return code


def check_password(password: str) -> None:
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise InvalidArgument(
            f"password must be {PASSWORD_MIN} to {PASSWORD_MAX} characters long"
        )
