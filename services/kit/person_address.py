"""Whether a client address can say anything about the person behind it: the one rule that
anti-abuse links accounts by and that accounts refuses a terminated person's
re-registration by.

An address in one of :data:`NOT_A_PERSON` is shared by construction, or is not where a
client is, so it never links two accounts and is never blocked:

- 10/8, 172.16/12, 192.168/16, fc00::/7, private: every home router, office and campus
  hands them out again; the same 192.168.1.10 is in millions of homes;
- 100.64.0.0/10, carrier-grade NAT (RFC 6598): one carrier's subscribers share it,
  many at once;
- 127/8, ::1, loopback: the caller is on the gateway's own host (tavla dev's players);
- 169.254/16, fe80::/10, link-local: one network segment's self-assigned addresses;
- 0/8, ::, 240/4 (with 255.255.255.255): "this network", unspecified, reserved and
  broadcast: no client sends from them;
- 224/4, ff00::/8, multicast: a group, never one sender.

The documentation ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are
left as addresses of a person: no real client sends from them, and examples and tests
use them as public addresses. An IPv4 address written in IPv6 form (``::ffff:a.b.c.d``)
is read as the IPv4 address it carries.
"""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

NOT_A_PERSON: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7",  # private
        "100.64.0.0/10",  # carrier-grade NAT
        "127.0.0.0/8", "::1/128",  # loopback
        "169.254.0.0/16", "fe80::/10",  # link-local
        "0.0.0.0/8", "::/128", "240.0.0.0/4",  # this network, unspecified, reserved, broadcast
        "224.0.0.0/4", "ff00::/8",  # multicast
    )
)  # fmt: skip


def person_address(text: str) -> IPAddress | None:
    """The address, canonical, when it can be one person's; None when it is not an
    address or lies in :data:`NOT_A_PERSON`."""
    try:
        ip = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if any(ip.version == net.version and ip in net for net in NOT_A_PERSON):
        return None
    return ip
