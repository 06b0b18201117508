"""A terminated person may never register again: the identifiers registration refuses.

The seed: "Upon termination of your account ... you will be prohibited from any
future membership". Termination (anti-abuse's ``AccountSanctioned`` of kind
TERMINATE_ACCOUNT) adds the account's identifiers here, from accounts' own
records; Register refuses a request matching any of them with
FAILED_PRECONDITION. What is checked, and why:

- ``email``: the normalised mailbox (:mod:`services.kit.mailbox`: case, ``+tags``
  and Gmail dots removed), for ever;
- ``device``: every device id the account logged in or refreshed from, for ever
  (an app installation id is one person's);
- ``address``: every public client address it used, for ``ADDRESS_BLOCK`` after
  the termination only: addresses are shared (NAT, carriers) and reassigned,
  so a permanent block would refuse strangers. An address that cannot be one
  person's (private, carrier-grade NAT, loopback, link-local, reserved, multicast:
  :mod:`services.kit.person_address`) is never blocked: blocking 192.168.1.10 or a
  carrier's 100.64/10 address would refuse strangers behind any such router or NAT.

No payment instrument is checked: no event or record of accounts carries one
(the wallet's deposits have only a provider reference). The refusal does
not say which identifier matched, so that it does not teach evasion; the log does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Column, DateTime, MetaData, String, Table, or_, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.mailbox import mailbox_key
from services.kit.person_address import person_address

ADDRESS_BLOCK = timedelta(days=30)
TERMINATED_MESSAGE = (
    "an account of this person was terminated for breaking the site's rules, and a "
    "terminated player may not open a new account; contact support if this is a mistake"
)

metadata = MetaData()

blocked_identifiers = Table(
    "blocked_identifiers",
    metadata,
    Column("kind", String(10), primary_key=True),
    Column("value", String(254), primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("sanction_id", String(36), nullable=False),
    Column("blocked_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class Identifier:
    kind: str  # "email", "device", "address"
    value: str


def email_identifier(email: str) -> list[Identifier]:
    mailbox = mailbox_key(email)
    return [Identifier("email", mailbox[:254])] if mailbox else []


def device_identifier(device_id: str) -> list[Identifier]:
    device = device_id.strip()
    return [Identifier("device", device[:254])] if device else []


def address_identifier(address: str) -> list[Identifier]:
    ip = person_address(address)
    return [] if ip is None else [Identifier("address", str(ip))]


def identifiers_of(
    email: str, devices: Iterable[str] = (), addresses: Iterable[str] = ()
) -> set[Identifier]:
    found = set(email_identifier(email))
    for device in devices:
        found.update(device_identifier(device))
    for address in addresses:
        found.update(address_identifier(address))
    return found


class Blocklist:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(
        self, identifiers: Iterable[Identifier], *, account_id: str, sanction_id: str, at: datetime
    ) -> None:
        rows = [
            {"kind": i.kind, "value": i.value, "account_id": account_id,
             "sanction_id": sanction_id, "blocked_at": at}
            for i in sorted(identifiers, key=lambda i: (i.kind, i.value))
        ]
        if rows:
            # The first termination naming an identifier keeps it (and its time).
            await self._session.execute(insert(blocked_identifiers).on_conflict_do_nothing(), rows)

    async def match(self, identifiers: Iterable[Identifier], now: datetime) -> Identifier | None:
        """The first of ``identifiers`` blocked now, if any."""
        wanted = list(identifiers)
        if not wanted:
            return None
        c = blocked_identifiers.c
        query = select(c.kind, c.value).where(
            or_(*((c.kind == i.kind) & (c.value == i.value) for i in wanted)),
            or_(c.kind != "address", c.blocked_at > now - ADDRESS_BLOCK),
        ).limit(1)
        row = (await self._session.execute(query)).first()
        return None if row is None else Identifier(row.kind, row.value)
