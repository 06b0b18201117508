"""Accounts use cases: each opens a unit of work, applies the domain, records events.

Register and login ask the geo service first (``services.kit.geo_gate``) with the
client's address and device id as the gateway passed them
(``services.kit.client_signals``): a block raises before anything is written, so a
refused registration creates no account and a refused login opens no session and
publishes nothing. Geo unreachable lets both go on (the gate logs it).
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerifyMismatchError
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.exc import IntegrityError

from services.accounts.blocklist import TERMINATED_MESSAGE, identifiers_of
from services.accounts.domain import (
    FAILED_LOGINS_BEFORE_LOCK,
    TOPIC,
    Account,
    AccountStatus,
    Registration,
    check_password,
    normalise_email,
)
from services.accounts.screen_names import check_screen_name
from services.accounts.sessions import (
    UNKNOWN_REFRESH_TOKEN,
    RefreshToken,
    Session,
    Verdict,
    judge_refresh,
    refresh_token_hash,
    refusal,
)
from services.accounts.store import AccountsUnitOfWork
from services.accounts.tokens import AccessToken, TokenIssuer
from services.kit.auth import require_self
from services.kit.client_signals import ClientSignals
from services.kit.clock import Clock
from services.kit.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    Unauthenticated,
)
from services.kit.geo_gate import GeoGate
from services.kit.logging import get_logger
from tavla.accounts.v1 import events_pb2
from tavla.geo.v1 import geo_pb2

log = get_logger(__name__)

# One answer for an unknown email, a wrong password and a locked account, after the same
# argon2 work: neither the answer nor its time tells a guesser whether an email has an
# account or whether their guesses locked it. The owner learns of a lock from this
# answer's second half (and AccountLocked, for any notice the operator sends).
_BAD_LOGIN = (
    "email or password is wrong, or the account is locked after "
    f"{FAILED_LOGINS_BEFORE_LOCK} failed logins in a row: try again later or contact support"
)
# Account ids a GetScreenNames call may ask for at once (a lobby page, a leaderboard page).
MAX_SCREEN_NAMES = 100
# A call that did not come through the gateway (tests, tools): no address, no device.
NO_SIGNALS = ClientSignals()


@dataclass(frozen=True)
class SessionPolicy:
    """How long a lock after failed logins and a refresh token last."""

    lockout: timedelta = timedelta(minutes=15)
    refresh_ttl: timedelta = timedelta(days=30)


@dataclass(frozen=True)
class SignedIn:
    """What a login or a refresh hands the client."""

    account: Account
    access: AccessToken
    refresh_token: str
    refresh_expires_at: datetime


def _name_taken(name: str) -> str:
    return (
        f"the screen name {name!r} is taken, or one that looks like it (case and look-alike "
        "letters such as 0/O or 1/l count): choose another"
    )


def _check_account_id(account_id: str) -> None:
    try:
        uuid.UUID(account_id)
    except ValueError:
        raise InvalidArgument(f"{account_id[:40]!r} is not an account id (a UUID)") from None


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
        geo: GeoGate,
        policy: SessionPolicy | None = None,
    ) -> None:
        self._uow = unit_of_work
        self._hasher = hasher
        self._tokens = tokens
        self._clock = clock
        self._geo = geo
        self._policy = policy or SessionPolicy()
        # Unknown emails are checked against this, so that they cost the same argon2
        # work as known ones and the answer's timing does not tell which emails exist.
        self._dummy_hash = hasher.hash(secrets.token_urlsafe(24))

    async def register(
        self,
        *,
        email: str,
        password: str,
        display_name: str,
        residence: str,
        date_of_birth: str,
        signals: ClientSignals = NO_SIGNALS,
    ) -> Account:
        registration = Registration.parse(
            email, display_name, residence, date_of_birth, self._clock.now().date()
        )
        check_password(password)
        await self._refuse_terminated(registration.email, signals)
        await self._geo.require(
            geo_pb2.PURPOSE_REGISTER, account_id="", residence=registration.residence,
            signals=signals,
        )
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
            residence=registration.residence,
            date_of_birth=registration.date_of_birth,
            screen_name=registration.display_name,
        )
        if await self._open_account(account):
            return account
        async with self._uow() as uow:  # lost a race: say which one was taken
            await self._refuse_taken(uow, account)
        raise AlreadyExists("an account with this email or display name already exists")

    async def _open_account(self, account: Account) -> bool:
        """Write the account with AccountRegistered; False if a concurrent registration of
        the same email or a look-alike name won (the unique indexes settle it: at the
        insert, or at the commit)."""
        assert account.date_of_birth is not None
        try:
            async with self._uow() as uow:
                await self._refuse_taken(uow, account)
                await uow.accounts.add(account)
                uow.publish(
                    TOPIC,
                    account.account_id,
                    events_pb2.AccountRegistered(
                        account_id=account.account_id,
                        email=account.email,
                        display_name=account.display_name,
                        country_code=account.country_code,
                        occurred_at=_timestamp(account.created_at),
                        residence=account.residence,
                        date_of_birth=account.date_of_birth.isoformat(),
                    ),
                )
                await uow.commit()
        except IntegrityError:
            return False
        return True

    @staticmethod
    async def _refuse_taken(uow: AccountsUnitOfWork, account: Account) -> None:
        taken = await uow.accounts.email_or_name_taken(account.email, account.display_name)
        if taken == "email":
            raise AlreadyExists("an account with this email already exists")
        if taken:
            raise AlreadyExists(_name_taken(account.display_name))

    async def set_screen_name(self, *, acting: str, account_id: str, screen_name: str) -> Account:
        """The owner of an account with no screen name chooses one, once."""
        require_self(acting, account_id)
        name = check_screen_name(screen_name)
        try:
            async with self._uow() as uow:
                account = await uow.accounts.get_for_update(account_id)
                if account is None:
                    raise NotFound(f"no account {account_id}")
                chosen = account.choose_screen_name(name)
                if await uow.accounts.screen_name_taken(name, other_than=account_id):
                    raise AlreadyExists(_name_taken(name))
                await uow.accounts.save(chosen)  # or the commit: a look-alike's race
                uow.publish(TOPIC, account_id, events_pb2.ScreenNameChosen(
                    account_id=account_id, screen_name=name,
                    previous_display_name=account.display_name,
                    occurred_at=_timestamp(self._clock.now()),
                ))
                await uow.commit()
        except IntegrityError:  # lost a race with a registration of a look-alike
            raise AlreadyExists(_name_taken(name)) from None
        return chosen

    async def screen_names(self, account_ids: Sequence[str]) -> dict[str, str]:
        """The chosen screen names of those of ``account_ids`` that have one."""
        wanted = set(account_ids)
        if len(wanted) > MAX_SCREEN_NAMES:
            raise InvalidArgument(
                f"ask for at most {MAX_SCREEN_NAMES} account ids at once ({len(wanted)} asked)"
            )
        for account_id in wanted:
            _check_account_id(account_id)
        if not wanted:
            return {}
        async with self._uow() as uow:
            return await uow.accounts.screen_names(wanted)

    async def _refuse_terminated(self, email: str, signals: ClientSignals) -> None:
        """A terminated person may not register again (``services/accounts/blocklist.py``)."""
        wanted = identifiers_of(email, [signals.device_id], [signals.address])
        async with self._uow() as uow:
            matched = await uow.blocklist.match(wanted, self._clock.now())
        if matched is not None:
            log.warning("registration_of_terminated_person", identifier_kind=matched.kind)
            raise FailedPrecondition(TERMINATED_MESSAGE)

    async def login(
        self, *, email: str, password: str, signals: ClientSignals = NO_SIGNALS
    ) -> SignedIn:
        try:
            normalised = normalise_email(email)
        except ValueError:
            raise Unauthenticated(_BAD_LOGIN) from None
        async with self._uow() as uow:
            account = await uow.accounts.get_by_email(normalised)
        if account is None:
            await self._verify(self._dummy_hash, password)
            raise Unauthenticated(_BAD_LOGIN)
        matches = await self._verify(account.password_hash, password)
        if account.locked_at(self._clock.now()):
            # Refused whatever the password (guessing on would defeat the lock), after the
            # same verification as any other attempt and with the same answer.
            raise Unauthenticated(_BAD_LOGIN)
        # Only a right password reaches geo (guessers make no geo decisions), and before
        # the row lock: a block leaves the account as it was (no session, no event).
        place = await self._geo_for_login(account, signals) if matches else None
        async with self._uow() as uow:
            # Counted under a row lock: concurrent wrong guesses all count.
            current = await uow.accounts.get_for_update(account.account_id)
            if current is None:
                raise Unauthenticated(_BAD_LOGIN)
            now = self._clock.now()
            if current.locked_at(now):
                # Locked by concurrent wrong guesses while this one was being verified.
                raise Unauthenticated(_BAD_LOGIN)
            if not matches:
                await self._count_failure(uow, current, now)
                raise Unauthenticated(_BAD_LOGIN)
            if current.status_at(now) in (AccountStatus.FROZEN, AccountStatus.CLOSED):
                raise FailedPrecondition(
                    f"the account is {current.status.value}; contact support"
                )
            return await self._open_session(
                uow, current.after_successful_login(), now, signals, place
            )

    async def _geo_for_login(
        self, account: Account, signals: ClientSignals
    ) -> geo_pb2.LocationDecision | None:
        if account.status_at(self._clock.now()) in (AccountStatus.FROZEN, AccountStatus.CLOSED):
            return None  # refused below anyway; geo need not decide
        return await self._geo.require(
            geo_pb2.PURPOSE_LOGIN, account_id=account.account_id, residence=account.residence,
            signals=signals,
        )

    async def refresh_session(
        self, *, refresh_token: str, signals: ClientSignals = NO_SIGNALS
    ) -> SignedIn:
        """Spend a refresh token for new tokens (rotation); a reused one ends its family.

        The new token records this call's address and device id; no event, no geo
        check (the session goes on: see ``services/accounts/sessions.py``)."""
        async with self._uow() as uow:
            found = await uow.sessions.find_for_update(refresh_token_hash(refresh_token))
            if found is None:
                raise Unauthenticated(UNKNOWN_REFRESH_TOKEN)
            record, family = found
            now = self._clock.now()
            verdict = judge_refresh(record, family, now)
            if verdict is Verdict.REUSED:
                await uow.sessions.revoke(family.family_id, now, "reuse")
                await uow.commit()
            if verdict is not Verdict.ROTATE:
                raise refusal(verdict)
            account = await uow.accounts.get(family.account_id)
            if account is None or account.status_at(now) in (
                AccountStatus.FROZEN, AccountStatus.CLOSED
            ):
                await uow.sessions.revoke(family.family_id, now, "account")
                await uow.commit()
                raise FailedPrecondition("the account is not open; contact support")
            await uow.sessions.spend(record.token_hash, now)
            token, successor = self._new_refresh_token(family.family_id, now, signals)
            await uow.sessions.add_token(successor)
            roles = await uow.roles.of(account.account_id)
            await uow.commit()
        access = self._tokens.issue(account.account_id, now, account.residence, roles,
                                    account.screen_name)
        return SignedIn(account, access, token, successor.expires_at)

    async def logout(self, *, refresh_token: str) -> None:
        """End the session the refresh token belongs to (idempotent)."""
        async with self._uow() as uow:
            found = await uow.sessions.find_for_update(refresh_token_hash(refresh_token))
            if found is None:
                raise Unauthenticated(UNKNOWN_REFRESH_TOKEN)
            _, family = found
            await uow.sessions.revoke(family.family_id, self._clock.now(), "logout")
            await uow.commit()

    async def _open_session(
        self,
        uow: AccountsUnitOfWork,
        account: Account,
        now: datetime,
        signals: ClientSignals,
        place: geo_pb2.LocationDecision | None,
    ) -> SignedIn:
        """A new token family for a successful login, committed with the reset count and
        LoggedIn (where it came from, for anti-abuse)."""
        await uow.accounts.save(account)
        family = Session(str(uuid.uuid4()), account.account_id, now,
                         client_address=signals.address, device_id=signals.device_id)
        token, record = self._new_refresh_token(family.family_id, now, signals)
        await uow.sessions.open(family, record)
        uow.publish(TOPIC, account.account_id, events_pb2.LoggedIn(
            account_id=account.account_id, ip_address=signals.address,
            device_id=signals.device_id, occurred_at=_timestamp(now),
            session_id=family.family_id,
            country=place.country_code if place else "",
            region=place.region_code if place else "",
        ))
        roles = await uow.roles.of(account.account_id)
        await uow.commit()
        access = self._tokens.issue(account.account_id, now, account.residence, roles,
                                    account.screen_name)
        return SignedIn(account, access, token, record.expires_at)

    async def _count_failure(self, uow: AccountsUnitOfWork, account: Account,
                             now: datetime) -> None:
        failed = account.after_failed_login(now, self._policy.lockout)
        await uow.accounts.save(failed)
        if failed.locked_until is not None and failed.locked_until != account.locked_until:
            uow.publish(TOPIC, account.account_id, events_pb2.AccountLocked(
                account_id=account.account_id, until=_timestamp(failed.locked_until),
                failed_logins=FAILED_LOGINS_BEFORE_LOCK, occurred_at=_timestamp(now),
            ))
        await uow.commit()

    def _new_refresh_token(
        self, family_id: str, now: datetime, signals: ClientSignals
    ) -> tuple[str, RefreshToken]:
        token = secrets.token_urlsafe(32)
        record = RefreshToken(refresh_token_hash(token), family_id, now,
                              now + self._policy.refresh_ttl, client_address=signals.address,
                              device_id=signals.device_id)
        return token, record

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

    async def _verify(self, password_hash: str, password: str) -> bool:
        # argon2 is deliberately slow: keep it off the event loop.
        try:
            return await asyncio.to_thread(self._hasher.verify, password_hash, password)
        except (VerifyMismatchError, InvalidHashError):
            return False
