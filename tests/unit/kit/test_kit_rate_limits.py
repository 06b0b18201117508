"""The direct-call limiter's buckets and peer addresses (pure: a clock is given)."""

from __future__ import annotations

import pytest

from services.kit.rate_limits import TokenBuckets, default_limits, peer_host


def test_a_bucket_allows_its_size_then_refills_at_its_rate() -> None:
    now = [0.0]
    buckets = TokenBuckets(10, 60, clock=lambda: now[0])
    assert [buckets.take("10.0.0.7") for _ in range(11)] == [True] * 10 + [False]
    assert buckets.take("10.0.0.8")  # another address has its own bucket
    now[0] = 6.0  # one token back every six seconds
    assert buckets.take("10.0.0.7")
    assert not buckets.take("10.0.0.7")
    now[0] = 1000.0  # never more than its size
    assert [buckets.take("10.0.0.7") for _ in range(11)] == [True] * 10 + [False]


def test_the_limits_are_the_gateways() -> None:
    assert default_limits() == {
        "/tavla.accounts.v1.AccountsService/Login": (10, 60),
        "/tavla.accounts.v1.AccountsService/Register": (5, 60),
        "/tavla.accounts.v1.AccountsService/RefreshSession": (30, 60),
    }


@pytest.mark.parametrize(("peer", "host"), [
    ("ipv4:10.0.0.7:51234", "10.0.0.7"),
    ("ipv6:[2001:db8::1]:443", "2001:db8::1"),
    ("unix:/tmp/socket", "unix:/tmp/socket"),
])
def test_the_peer_address_is_the_host_part(peer: str, host: str) -> None:
    assert peer_host(peer) == host
