"""The accounts and session tables and their repositories (SQLAlchemy Core; rows <-> domain)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Column,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from services.accounts.blocklist import Blocklist
from services.accounts.domain import Account, AccountStatus
from services.accounts.roles import RoleRepository
from services.accounts.screen_names import canonical
from services.accounts.sessions import RefreshToken, Session
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
    Column("failed_logins", Integer, nullable=False, server_default="0"),
    Column("locked_until", DateTime(timezone=True)),
    # ISO 3166 code ("MT", "US-NJ"); NULL only for accounts opened before it was asked.
    Column("residence", String(8)),
    Column("date_of_birth", Date),
    # screen_names.canonical(display_name) once the name was chosen under the screen-name
    # rules; NULL for an account opened before them. Unique: the race between two
    # registrations of look-alike names is the index's to settle.
    # Text: folding may turn one character into several (Cyrillic Ы is "bl").
    Column("screen_name_key", Text, unique=True),
)

# Longest text of an IPv6 address (with an embedded IPv4 address).
ADDRESS_LENGTH = 45
DEVICE_ID_LENGTH = 128

# One row per login: the family of refresh tokens rotated from it.
sessions = Table(
    "sessions",
    metadata,
    Column("family_id", String(36), primary_key=True),
    Column("account_id", String(36), ForeignKey("accounts.account_id"), nullable=False,
           index=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
    Column("revoked_reason", String(20)),
    Column("client_address", String(ADDRESS_LENGTH), nullable=False, server_default=""),
    Column("device_id", String(DEVICE_ID_LENGTH), nullable=False, server_default=""),
)

# Only the SHA-256 of each refresh token: the token itself is never stored.
refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("family_id", String(36), ForeignKey("sessions.family_id"), nullable=False,
           index=True),
    Column("issued_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("spent_at", DateTime(timezone=True)),
    Column("client_address", String(ADDRESS_LENGTH), nullable=False, server_default=""),
    Column("device_id", String(DEVICE_ID_LENGTH), nullable=False, server_default=""),
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
        failed_logins=row.failed_logins,
        locked_until=row.locked_until,
        residence=row.residence or "",
        date_of_birth=row.date_of_birth,
        screen_name=row.display_name if row.screen_name_key is not None else "",
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
        "failed_logins": account.failed_logins,
        "locked_until": account.locked_until,
        "residence": account.residence or None,
        "date_of_birth": account.date_of_birth,
        "screen_name_key": canonical(account.screen_name) if account.screen_name else None,
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

    async def get_for_update(self, account_id: str) -> Account | None:
        """The account, locked until the transaction ends (failed-login counting)."""
        query = select(accounts).where(accounts.c.account_id == account_id).with_for_update()
        row = (await self._session.execute(query)).first()
        return None if row is None else _to_domain(row)

    async def get_by_email(self, email: str) -> Account | None:
        query = select(accounts).where(accounts.c.email == email)
        row = (await self._session.execute(query)).first()
        return None if row is None else _to_domain(row)

    async def email_or_name_taken(self, email: str, display_name: str) -> str | None:
        """Which of the two is already in use, if either: the name as written, or one that
        looks like it (the same canonical form)."""
        row = (
            await self._session.execute(
                select(accounts.c.email).where(
                    (accounts.c.email == email)
                    | (accounts.c.display_name == display_name)
                    | (accounts.c.screen_name_key == canonical(display_name))
                )
            )
        ).first()
        if row is None:
            return None
        return "email" if row.email == email else "display name"

    async def screen_name_taken(self, name: str, other_than: str) -> bool:
        """Whether ``name``, or a name that looks like it, is an account's other than
        ``other_than``'s."""
        query = select(accounts.c.account_id).where(
            (accounts.c.display_name == name) | (accounts.c.screen_name_key == canonical(name)),
            accounts.c.account_id != other_than,
        )
        return (await self._session.execute(query)).first() is not None

    async def screen_names(self, account_ids: Collection[str]) -> dict[str, str]:
        """The chosen screen names of those of ``account_ids`` that have one."""
        query = select(accounts.c.account_id, accounts.c.display_name).where(
            accounts.c.account_id.in_(list(account_ids)),
            accounts.c.screen_name_key.is_not(None),
        )
        return {row.account_id: row.display_name
                for row in await self._session.execute(query)}


class SessionRepository:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def open(self, session: Session, first: RefreshToken) -> None:
        await self._session.execute(sessions.insert().values(
            family_id=session.family_id, account_id=session.account_id,
            created_at=session.created_at, client_address=session.client_address,
            device_id=session.device_id,
        ))
        await self.add_token(first)

    async def add_token(self, token: RefreshToken) -> None:
        await self._session.execute(refresh_tokens.insert().values(
            token_hash=token.token_hash, family_id=token.family_id, issued_at=token.issued_at,
            expires_at=token.expires_at, spent_at=token.spent_at,
            client_address=token.client_address, device_id=token.device_id,
        ))

    async def find_for_update(self, token_hash: str) -> tuple[RefreshToken, Session] | None:
        """The token and its family, both locked: concurrent uses of one token serialise."""
        query = (
            select(refresh_tokens, sessions.c.account_id, sessions.c.created_at,
                   sessions.c.revoked_at, sessions.c.revoked_reason,
                   sessions.c.client_address.label("session_address"),
                   sessions.c.device_id.label("session_device"))
            .join(sessions, sessions.c.family_id == refresh_tokens.c.family_id)
            .where(refresh_tokens.c.token_hash == token_hash)
            .with_for_update()
        )
        row = (await self._session.execute(query)).first()
        if row is None:
            return None
        token = RefreshToken(row.token_hash, row.family_id, row.issued_at, row.expires_at,
                             row.spent_at, row.client_address, row.device_id)
        family = Session(row.family_id, row.account_id, row.created_at, row.revoked_at,
                         row.revoked_reason, row.session_address, row.session_device)
        return token, family

    async def spend(self, token_hash: str, now: datetime) -> None:
        await self._session.execute(
            update(refresh_tokens).where(refresh_tokens.c.token_hash == token_hash)
            .values(spent_at=now)
        )

    async def revoke(self, family_id: str, now: datetime, reason: str) -> None:
        """End a family; a family already ended keeps its first reason and time."""
        await self._session.execute(
            update(sessions)
            .where(sessions.c.family_id == family_id, sessions.c.revoked_at.is_(None))
            .values(revoked_at=now, revoked_reason=reason)
        )

    async def revoke_all(self, account_id: str, now: datetime, reason: str) -> None:
        """End every open session of the account (a sanction): no refresh works after."""
        await self._session.execute(
            update(sessions)
            .where(sessions.c.account_id == account_id, sessions.c.revoked_at.is_(None))
            .values(revoked_at=now, revoked_reason=reason)
        )

    async def signals_of(self, account_id: str) -> tuple[set[str], set[str]]:
        """Every device id and client address the account logged in or refreshed from."""
        rows = (await self._session.execute(
            select(refresh_tokens.c.device_id, refresh_tokens.c.client_address)
            .join(sessions, sessions.c.family_id == refresh_tokens.c.family_id)
            .where(sessions.c.account_id == account_id)
        )).all()
        devices = {r.device_id for r in rows if r.device_id}
        addresses = {r.client_address for r in rows if r.client_address}
        return devices, addresses

    async def get(self, family_id: str) -> Session | None:
        row = (await self._session.execute(
            select(sessions).where(sessions.c.family_id == family_id))).first()
        if row is None:
            return None
        return Session(row.family_id, row.account_id, row.created_at, row.revoked_at,
                       row.revoked_reason, row.client_address, row.device_id)

    async def tokens_of(self, family_id: str) -> list[RefreshToken]:
        """Every refresh token of a session, oldest first (where each call came from)."""
        rows = (await self._session.execute(
            select(refresh_tokens).where(refresh_tokens.c.family_id == family_id)
            .order_by(refresh_tokens.c.issued_at))).all()
        return [RefreshToken(r.token_hash, r.family_id, r.issued_at, r.expires_at, r.spent_at,
                             r.client_address, r.device_id) for r in rows]


class AccountsUnitOfWork(UnitOfWork):
    accounts: AccountRepository
    sessions: SessionRepository
    roles: RoleRepository
    blocklist: Blocklist

    def _start(self) -> None:
        self.accounts = AccountRepository(self.session)
        self.sessions = SessionRepository(self.session)
        self.roles = RoleRepository(self.session)
        self.blocklist = Blocklist(self.session)
