"""Accounts use cases: each opens a unit of work, applies the domain, records events."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.exc import IntegrityError

from services.accounts.domain import (
    TOPIC,
    Account,
    AccountStatus,
    Registration,
    check_password,
    normalise_email,
)
from services.accounts.store import AccountsUnitOfWork
from services.accounts.tokens import AccessToken, TokenIssuer
from services.kit.auth import require_self
from services.kit.clock import Clock
from services.kit.errors import AlreadyExists, FailedPrecondition, NotFound, Unauthenticated
from tavla.accounts.v1 import events_pb2

_BAD_LOGIN = "email or password is wrong"


def _timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


class AccountsService:
    def __init__(
        self,
        unit_of_work: Callable[[], AccountsUnitOfWork],
        *,
        hasher: PasswordHasher,
        tokens: TokenIssuer,
        clock: Clock,
    ) -> None:
        self._uow = unit_of_work
        self._hasher = hasher
        self._tokens = tokens
        self._clock = clock

    async def register(
        self, *, email: str, password: str, display_name: str, country_code: str
    ) -> Account:
        registration = Registration.parse(email, display_name, country_code)
        check_password(password)
        # argon2 is deliberately slow: keep it off the event loop.
        password_hash = await asyncio.to_thread(self._hasher.hash, password)
        now = self._clock.now()
        account = Account(
            account_id=str(uuid.uuid4()),
            email=registration.email,
            display_name=registration.display_name,
            country_code=registration.country_code,
            status=AccountStatus.ACTIVE,
            password_hash=password_hash,
            created_at=now,
        )
        async with self._uow() as uow:
            taken = await uow.accounts.email_or_name_taken(account.email, account.display_name)
            if taken:
                raise AlreadyExists(f"an account with this {taken} already exists")
            await uow.accounts.add(account)
            uow.publish(
                TOPIC,
                account.account_id,
                events_pb2.AccountRegistered(
                    account_id=account.account_id,
                    email=account.email,
                    display_name=account.display_name,
                    country_code=account.country_code,
                    occurred_at=_timestamp(now),
                ),
            )
            try:
                await uow.commit()
            except IntegrityError:  # lost a race with an identical registration
                raise AlreadyExists(
                    "an account with this email or display name already exists"
                ) from None
        return account

    async def login(self, *, email: str, password: str) -> tuple[Account, AccessToken]:
        try:
            normalised = normalise_email(email)
        except ValueError:
            raise Unauthenticated(_BAD_LOGIN) from None
        async with self._uow() as uow:
            account = await uow.accounts.get_by_email(normalised)
        if account is None or not await self._password_matches(account, password):
            raise Unauthenticated(_BAD_LOGIN)
        now = self._clock.now()
        if account.status_at(now) in (AccountStatus.FROZEN, AccountStatus.CLOSED):
            raise FailedPrecondition(f"the account is {account.status.value}; contact support")
        return account, self._tokens.issue(account.account_id, now)

    async def get_account(self, *, acting: str, account_id: str) -> Account:
        require_self(acting, account_id)
        async with self._uow() as uow:
            account = await uow.accounts.get(account_id)
        if account is None:
            raise NotFound(f"no account {account_id}")
        return account

    async def self_exclude(self, *, acting: str, account_id: str, until: datetime) -> Account:
        require_self(acting, account_id)
        now = self._clock.now()
        async with self._uow() as uow:
            account = await uow.accounts.get(account_id)
            if account is None:
                raise NotFound(f"no account {account_id}")
            excluded = account.self_exclude(until, now)
            await uow.accounts.save(excluded)
            uow.publish(
                TOPIC,
                account_id,
                events_pb2.AccountSelfExcluded(
                    account_id=account_id, until=_timestamp(until), occurred_at=_timestamp(now)
                ),
            )
            await uow.commit()
        return excluded

    async def _password_matches(self, account: Account, password: str) -> bool:
        try:
            return await asyncio.to_thread(self._hasher.verify, account.password_hash, password)
        except (VerifyMismatchError, InvalidHashError):
            return False
