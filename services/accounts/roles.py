"""Staff roles: which accounts are compliance officers, and the audit log of every change.

A role is granted or revoked only by an operator with database access
(``tavla accounts grant-role``), never through a public call: no RPC writes
these tables. Each change is a row in the append-only ``role_changes`` and a
``RoleChanged`` event on ``tavla.accounts.v1`` (the outbox: the running accounts
service's relay publishes it). The roles are signed into the account's access
tokens (the ``roles`` claim) at every login and refresh, so a grant or a
revocation takes effect at the next one: a revoked role lives on in a token
already issued until it expires (``TAVLA_JWT_TTL_SECONDS``, 15 minutes by default).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Identity,
    MetaData,
    String,
    Table,
    delete,
    select,
)
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from services.kit.errors import InvalidArgument

# The roles methods may declare (``roles`` in a method's access option).
KNOWN_ROLES = frozenset({"compliance"})

metadata = MetaData()

account_roles = Table(
    "account_roles",
    metadata,
    Column("account_id", String(36), primary_key=True),
    Column("role", String(32), primary_key=True),
    Column("granted_at", DateTime(timezone=True), nullable=False),
    Column("granted_by", String(100), nullable=False),
)

role_changes = Table(
    "role_changes",
    metadata,
    Column("change_id", BigInteger, Identity(), primary_key=True),
    Column("account_id", String(36), nullable=False),
    Column("role", String(32), nullable=False),
    Column("granted", Boolean, nullable=False),
    Column("changed_by", String(100), nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False),
)


def check_role(role: str) -> str:
    if role not in KNOWN_ROLES:
        known = ", ".join(sorted(KNOWN_ROLES))
        raise InvalidArgument(f"unknown role {role!r}; known roles: {known}")
    return role


class RoleRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def of(self, account_id: str) -> list[str]:
        rows = await self._session.execute(
            select(account_roles.c.role)
            .where(account_roles.c.account_id == account_id)
            .order_by(account_roles.c.role)
        )
        return [row.role for row in rows]

    async def change(
        self, account_id: str, role: str, *, granted: bool, by: str, at: datetime
    ) -> bool:
        """Grant or revoke; False (and nothing logged) if the account already was so."""
        if granted:
            result = await self._session.execute(
                insert(account_roles)
                .values(account_id=account_id, role=role, granted_at=at, granted_by=by)
                .on_conflict_do_nothing()
                .returning(account_roles.c.role)
            )
        else:
            result = await self._session.execute(
                delete(account_roles)
                .where(account_roles.c.account_id == account_id, account_roles.c.role == role)
                .returning(account_roles.c.role)
            )
        if result.first() is None:
            return False
        await self._session.execute(role_changes.insert().values(
            account_id=account_id, role=role, granted=granted, changed_by=by, changed_at=at
        ))
        return True
