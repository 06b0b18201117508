"""The accounts table and its repository (SQLAlchemy Core; rows <-> domain objects)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, DateTime, MetaData, String, Table, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from services.accounts.domain import Account, AccountStatus
from services.kit.db import UnitOfWork

metadata = MetaData()

accounts = Table(
    "accounts",
    metadata,
    Column("account_id", String(36), primary_key=True),
    Column("email", String(254), nullable=False, unique=True),
    Column("display_name", String(24), nullable=False, unique=True),
    Column("country_code", String(2), nullable=False),
    Column("status", String(20), nullable=False),
    Column("password_hash", String(200), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("self_excluded_until", DateTime(timezone=True)),
)


def _to_domain(row: Any) -> Account:
    return Account(
        account_id=row.account_id,
        email=row.email,
        display_name=row.display_name,
        country_code=row.country_code,
        status=AccountStatus(row.status),
        password_hash=row.password_hash,
        created_at=row.created_at,
        self_excluded_until=row.self_excluded_until,
    )


def _to_row(account: Account) -> dict[str, Any]:
    return {
        "account_id": account.account_id,
        "email": account.email,
        "display_name": account.display_name,
        "country_code": account.country_code,
        "status": account.status.value,
        "password_hash": account.password_hash,
        "created_at": account.created_at,
        "self_excluded_until": account.self_excluded_until,
    }


class AccountRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def add(self, account: Account) -> None:
        await self._session.execute(accounts.insert().values(_to_row(account)))

    async def save(self, account: Account) -> None:
        await self._session.execute(
            update(accounts)
            .where(accounts.c.account_id == account.account_id)
            .values(_to_row(account))
        )

    async def get(self, account_id: str) -> Account | None:
        row = (
            await self._session.execute(select(accounts).where(accounts.c.account_id == account_id))
        ).first()
        return None if row is None else _to_domain(row)

    async def get_by_email(self, email: str) -> Account | None:
        query = select(accounts).where(accounts.c.email == email)
        row = (await self._session.execute(query)).first()
        return None if row is None else _to_domain(row)

    async def email_or_name_taken(self, email: str, display_name: str) -> str | None:
        """Which of the two is already in use, if either."""
        row = (
            await self._session.execute(
                select(accounts.c.email, accounts.c.display_name).where(
                    (accounts.c.email == email) | (accounts.c.display_name == display_name)
                )
            )
        ).first()
        if row is None:
            return None
        return "email" if row.email == email else "display name"


class AccountsUnitOfWork(UnitOfWork):
    accounts: AccountRepository

    def _start(self) -> None:
        self.accounts = AccountRepository(self.session)
