"""Accounts domain rules: what a valid registration is, and self-exclusion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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


def test_registration_normalises_email_and_country() -> None:
    registration = Registration.parse("  Ann@Example.COM ", "ann_1", "mt")
    assert (registration.email, registration.country_code) == ("ann@example.com", "MT")


@pytest.mark.parametrize(
    ("email", "name", "country"),
    [("ann", "ann", "MT"), ("ann@example.com", "an", "MT"), ("ann@example.com", "ann", "MLT")],
)
def test_registration_refuses_bad_fields(email: str, name: str, country: str) -> None:
    with pytest.raises(InvalidArgument):
        Registration.parse(email, name, country)


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
