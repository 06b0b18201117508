"""Accounts' side of sanctions, pure: the mailbox key, the identifiers a termination blocks,
what suspension and termination do to an account, and roles in the access token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from services.accounts.blocklist import Identifier, identifiers_of
from services.accounts.domain import Account, AccountStatus
from services.accounts.roles import check_role
from services.accounts.tokens import TokenIssuer
from services.kit.errors import InvalidArgument
from services.kit.mailbox import mailbox_key

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


def test_one_mailbox_however_it_is_spelled() -> None:
    assert mailbox_key(" A.Lice+x@GoogleMail.com ") == "alice@gmail.com"
    assert mailbox_key("al.ice@gmail.com") == "alice@gmail.com"
    # Other providers' dots may matter: kept; tags and case are not.
    assert mailbox_key("Al.Ice+promo@Example.com") == "al.ice@example.com"
    assert mailbox_key("not-an-address") is None
    assert mailbox_key("+tag@example.com") is None


def test_a_termination_blocks_mailbox_devices_and_public_addresses_only() -> None:
    found = identifiers_of(
        "Ann.Smith+x@gmail.com", ["dev-1", " ", "dev-2"],
        ["203.0.113.7", "127.0.0.1", "::1", "fe80::1", "0.0.0.0", "not an ip",
         # Behind any home router, office or carrier NAT: blocking them refuses strangers.
         "10.1.2.3", "172.16.0.9", "192.168.1.10", "100.64.0.1", "100.127.255.254", "fd00::1",
         "240.0.0.1", "::ffff:198.51.100.9"],
    )
    assert found == {
        Identifier("email", "annsmith@gmail.com"),
        Identifier("device", "dev-1"),
        Identifier("device", "dev-2"),
        Identifier("address", "203.0.113.7"),
        Identifier("address", "198.51.100.9"),  # an IPv4 address in IPv6 form is itself
    }


def _account(status: AccountStatus = AccountStatus.ACTIVE) -> Account:
    return Account("a", "a@example.com", "ann", "MT", status, "hash", NOW)


def test_suspension_freezes_termination_closes_and_closed_stays_closed() -> None:
    assert _account().suspended().status is AccountStatus.FROZEN
    assert _account().terminated().status is AccountStatus.CLOSED
    assert _account(AccountStatus.CLOSED).suspended().status is AccountStatus.CLOSED


def test_roles_are_signed_into_the_token_only_when_held() -> None:
    issuer = TokenIssuer(ec.generate_private_key(ec.SECP256R1()), timedelta(minutes=15))
    decode = lambda token: jwt.decode(token, options={"verify_signature": False})  # noqa: E731
    assert decode(issuer.issue("a", NOW, "MT", ["compliance"]).token)["roles"] == ["compliance"]
    assert "roles" not in decode(issuer.issue("a", NOW, "MT").token)


def test_only_known_roles_are_granted() -> None:
    assert check_role("compliance") == "compliance"
    with pytest.raises(InvalidArgument, match="known roles: compliance"):
        check_role("admin")
