"""Accounts domain rules: what a valid registration is, and self-exclusion."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from services.accounts.domain import (
    Account,
    AccountStatus,
    Registration,
    check_password,
)
from services.kit.errors import FailedPrecondition, InvalidArgument

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def account(**changes: object) -> Account:
    values: dict[str, object] = {
        "account_id": "a-1",
        "email": "ann@example.com",
        "display_name": "ann",
        "country_code": "MT",
        "status": AccountStatus.ACTIVE,
        "password_hash": "x",
        "created_at": NOW,
    }
    values.update(changes)
    return Account(**values)  # type: ignore[arg-type]


def test_registration_normalises_email_and_residence() -> None:
    registration = Registration.parse("  Ann@Example.COM ", "ann_1", "us-nj", "1990-04-21",
                                      NOW.date())
    assert (registration.email, registration.residence, registration.country_code) == (
        "ann@example.com", "US-NJ", "US")
    assert registration.date_of_birth == date(1990, 4, 21)
    malta = Registration.parse("ann@example.com", "ann", "mt", "1990-04-21", NOW.date())
    assert (malta.residence, malta.country_code) == ("MT", "MT")


@pytest.mark.parametrize(
    ("email", "name", "residence", "born"),
    [("ann", "ann", "MT", "1990-04-21"), ("ann@example.com", "an", "MT", "1990-04-21"),
     ("ann@example.com", "ann", "MLT", "1990-04-21"),
     ("ann@example.com", "ann", "US", "1990-04-21"),
     ("ann@example.com", "ann", "MT", "2010-04-21")],
)
def test_registration_refuses_bad_fields(email: str, name: str, residence: str, born: str) -> None:
    with pytest.raises(InvalidArgument):
        Registration.parse(email, name, residence, born, NOW.date())


def test_password_length_is_bounded() -> None:
    check_password("x" * 10)
    with pytest.raises(InvalidArgument, match="10 to 256"):
        check_password("x" * 9)


def test_self_exclusion_ends_by_itself() -> None:
    excluded = account().self_exclude(NOW + timedelta(days=1), NOW)
    assert excluded.status_at(NOW) is AccountStatus.SELF_EXCLUDED
    assert excluded.status_at(NOW + timedelta(days=1)) is AccountStatus.ACTIVE


def test_self_exclusion_cannot_be_shortened_or_set_in_the_past() -> None:
    excluded = account().self_exclude(NOW + timedelta(days=30), NOW)
    with pytest.raises(FailedPrecondition, match="cannot be shortened"):
        excluded.self_exclude(NOW + timedelta(days=1), NOW)
    assert excluded.self_exclude(NOW + timedelta(days=60), NOW).self_excluded_until == (
        NOW + timedelta(days=60)
    )
    with pytest.raises(InvalidArgument, match="future"):
        account().self_exclude(NOW, NOW)


def test_a_frozen_account_cannot_self_exclude() -> None:
    with pytest.raises(FailedPrecondition, match="frozen"):
        account(status=AccountStatus.FROZEN).self_exclude(NOW + timedelta(days=1), NOW)


# --- lockout after failed logins (NJAC 13:69O-1.4(i)) -------------------------------------

LOCK = timedelta(minutes=15)


def test_the_third_failed_login_in_a_row_locks_the_account_for_the_period() -> None:
    once = account().after_failed_login(NOW, LOCK)
    twice = once.after_failed_login(NOW, LOCK)
    assert (once.locked_at(NOW), twice.locked_at(NOW)) == (False, False)
    thrice = twice.after_failed_login(NOW, LOCK)
    assert thrice.locked_until == datetime(2026, 6, 1, 0, 15, tzinfo=UTC)
    assert thrice.locked_at(NOW + timedelta(minutes=14, seconds=59))
    assert not thrice.locked_at(NOW + timedelta(minutes=15))


def test_a_successful_login_resets_the_count() -> None:
    twice = account().after_failed_login(NOW, LOCK).after_failed_login(NOW, LOCK)
    again = twice.after_successful_login().after_failed_login(NOW, LOCK)
    assert again.failed_logins == 1 and not again.locked_at(NOW)


def test_after_a_lock_ends_three_more_failures_lock_again() -> None:
    locked = account(failed_logins=2).after_failed_login(NOW, LOCK)
    later = NOW + timedelta(minutes=20)
    relocked = locked.after_failed_login(later, LOCK).after_failed_login(later, LOCK)
    assert not relocked.locked_at(later)
    relocked = relocked.after_failed_login(later, LOCK)
    assert relocked.locked_until == later + LOCK

