"""Login lockout, refresh-token rotation and reuse detection, logout, and equal argon2 work
for unknown emails: the accounts service on the real PostgreSQL, time on a manual clock."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import argon2
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker

from services.accounts.service import AccountsService, SessionPolicy
from services.accounts.store import AccountsUnitOfWork
from services.accounts.tokens import TokenIssuer
from services.kit.client_signals import ClientSignals
from services.kit.clock import ManualClock
from services.kit.db import make_engine
from services.kit.devstack.net import free_port
from services.kit.errors import InvalidArgument, Unauthenticated
from services.kit.geo_gate import GeoGate
from tavla.accounts.v1 import events_pb2
from tests.support.identity import minter
from tests.support.services import migrated_database, write_signing_key

PASSWORD = "correct horse battery"
START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class CountingHasher(argon2.PasswordHasher):
    """The real argon2 hasher, recording which hashes it verified against."""

    def __init__(self) -> None:
        super().__init__()
        self.verified: list[str] = []

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        self.verified.append(hash if isinstance(hash, str) else hash.decode())
        return super().verify(hash, password)


@pytest.fixture
async def engine(postgres_server: Any) -> AsyncIterator[AsyncEngine]:
    name = await migrated_database(postgres_server, "accounts_sessions", "accounts")
    database = make_engine(postgres_server.url(name))
    yield database
    await database.dispose()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def hasher() -> CountingHasher:
    return CountingHasher()


def accounts_service(
    engine: AsyncEngine, clock: ManualClock, hasher: argon2.PasswordHasher, tmp_path: Path,
    geo: GeoGate,
) -> AccountsService:
    unit_of_work = partial(AccountsUnitOfWork, async_sessionmaker(engine, expire_on_commit=False),
                           source="accounts", clock=clock)
    tokens = TokenIssuer.from_files(str(write_signing_key(tmp_path)), timedelta(minutes=15))
    return AccountsService(
        unit_of_work, hasher=hasher, tokens=tokens, clock=clock, geo=geo,
        policy=SessionPolicy(lockout=timedelta(minutes=15), refresh_ttl=timedelta(days=30)),
    )


@pytest.fixture
def service(
    engine: AsyncEngine, clock: ManualClock, hasher: CountingHasher, tmp_path: Path
) -> AccountsService:
    # No geo configured: calls here carry no client address, so the gate is not asked.
    return accounts_service(engine, clock, hasher, tmp_path, GeoGate(None))


async def new_player(service: AccountsService) -> str:
    name = f"p{uuid.uuid4().hex[:10]}"
    account = await service.register(email=f"{name}@example.com", password=PASSWORD,
                                     display_name=name, residence="MT",
                                     date_of_birth="1990-04-21")
    return account.email


async def test_eighteen_is_counted_on_the_service_clock(service: AccountsService) -> None:
    """START is 2026-06-01: born 2008-06-01 is 18 that day, born 2008-06-02 is not."""
    def details(born: str) -> dict[str, str]:
        name = f"p{uuid.uuid4().hex[:10]}"
        return {"email": f"{name}@example.com", "password": PASSWORD, "display_name": name,
                "residence": "MT", "date_of_birth": born}

    with pytest.raises(InvalidArgument, match="turn 18 on 2026-06-02"):
        await service.register(**details("2008-06-02"))
    account = await service.register(**details("2008-06-01"))
    assert account.date_of_birth == date(2008, 6, 1)


async def test_with_geo_down_registration_and_login_go_on_and_are_recorded(
    engine: AsyncEngine, clock: ManualClock, hasher: CountingHasher, tmp_path: Path
) -> None:
    """Nothing listens where geo should be: register and login are not real money."""
    down = GeoGate.from_env(minter("accounts"), {"TAVLA_GEO_ADDRESS": f"127.0.0.1:{free_port()}"})
    service = accounts_service(engine, clock, hasher, tmp_path, down)
    here = ClientSignals(address="198.51.100.7", device_id="phone-2")
    name = f"p{uuid.uuid4().hex[:10]}"
    account = await service.register(email=f"{name}@example.com", password=PASSWORD,
                                     display_name=name, residence="US-NJ",
                                     date_of_birth="1990-04-21", signals=here)
    await service.login(email=account.email, password=PASSWORD, signals=here)
    await down.close()
    async with engine.connect() as connection:
        (payload,) = (await connection.execute(text(
            "SELECT payload FROM outbox WHERE key = :a AND "
            "ce_type = 'tavla.accounts.v1.LoggedIn'"), {"a": account.account_id})).scalars()
    event = events_pb2.LoggedIn.FromString(payload)
    # Recorded with what the gateway saw; no place, since geo gave no decision.
    assert (event.ip_address, event.device_id, event.country, event.region) == (
        "198.51.100.7", "phone-2", "", "")


# The one answer to an unknown email, a wrong password and a locked account alike.
BAD_LOGIN = (
    "email or password is wrong, or the account is locked after 3 failed logins in a row: "
    "try again later or contact support"
)


async def fail_login(
    service: AccountsService, email: str, password: str = "wrong password!"
) -> str:
    """The refusal's message (always the one answer)."""
    with pytest.raises(Unauthenticated) as refused:
        await service.login(email=email, password=password)
    assert str(refused.value) == BAD_LOGIN
    return str(refused.value)


# --- lockout --------------------------------------------------------------------------------


async def test_three_failed_logins_in_a_row_lock_the_account_until_a_stated_time(
    service: AccountsService, clock: ManualClock
) -> None:
    email = await new_player(service)
    for _ in range(3):
        await fail_login(service, email)
    # Even the right password is refused while locked, with the answer of any failed login.
    await fail_login(service, email, PASSWORD)
    clock.advance(timedelta(minutes=14, seconds=59))
    await fail_login(service, email, PASSWORD)
    clock.advance(timedelta(seconds=1))
    signed_in = await service.login(email=email, password=PASSWORD)
    assert signed_in.account.email == email


async def test_a_successful_login_resets_the_count(service: AccountsService) -> None:
    email = await new_player(service)
    await fail_login(service, email)
    await fail_login(service, email)
    await service.login(email=email, password=PASSWORD)
    await fail_login(service, email)
    await fail_login(service, email)
    # Two in a row again, not four: still open.
    assert (await service.login(email=email, password=PASSWORD)).account.email == email


async def test_the_lock_survives_in_the_database(
    service: AccountsService, engine: AsyncEngine
) -> None:
    email = await new_player(service)
    for _ in range(3):
        await fail_login(service, email)
    async with engine.connect() as connection:
        row = (await connection.execute(
            text("SELECT failed_logins, locked_until FROM accounts WHERE email = :e"),
            {"e": email},
        )).one()
    assert row.failed_logins == 0
    assert row.locked_until == START + timedelta(minutes=15)
    # The lock is a fact for compliance: one AccountLocked event, committed with it.
    async with engine.connect() as connection:
        events = (await connection.execute(text(
            "SELECT key, payload FROM outbox WHERE ce_type = 'tavla.accounts.v1.AccountLocked'"
        ))).all()
    ((key, payload),) = events
    event = events_pb2.AccountLocked.FromString(payload)
    assert key == event.account_id
    assert event.until.ToDatetime(tzinfo=UTC) == START + timedelta(minutes=15)
    assert event.failed_logins == 3


async def test_unknown_emails_are_never_told_about_locks(service: AccountsService) -> None:
    for _ in range(4):
        await fail_login(service, "nobody@example.com")


# --- the same argon2 work for unknown emails ------------------------------------------------


async def test_an_unknown_email_costs_the_same_argon2_verify_as_a_known_one(
    service: AccountsService, hasher: CountingHasher
) -> None:
    email = await new_player(service)
    hasher.verified.clear()
    await fail_login(service, email)
    await fail_login(service, "nobody@example.com")
    known, unknown = hasher.verified
    assert unknown != known
    # One verify each, against hashes made with the same argon2 parameters.
    assert argon2.extract_parameters(unknown) == argon2.extract_parameters(known)


async def test_a_locked_account_costs_the_same_verify_and_answer_as_an_unknown_email(
    service: AccountsService, hasher: CountingHasher, clock: ManualClock
) -> None:
    email = await new_player(service)
    for _ in range(3):
        await fail_login(service, email)
    hasher.verified.clear()
    locked_answer = await fail_login(service, email, PASSWORD)
    unknown_answer = await fail_login(service, "nobody@example.com", PASSWORD)
    assert locked_answer == unknown_answer
    # One argon2 verify each (the locked account's own hash, the dummy for the unknown
    # email), with the same parameters: the same work, so the same time.
    locked, unknown = hasher.verified
    assert argon2.extract_parameters(locked) == argon2.extract_parameters(unknown)
    # The lock itself still holds, and ends when it said.
    clock.advance(timedelta(minutes=15))
    assert (await service.login(email=email, password=PASSWORD)).account.email == email


# --- refresh tokens ---------------------------------------------------------------------------


async def test_refresh_rotates_and_a_spent_token_is_refused(
    service: AccountsService, clock: ManualClock
) -> None:
    email = await new_player(service)
    first = await service.login(email=email, password=PASSWORD)
    assert first.refresh_expires_at == START + timedelta(days=30)
    clock.advance(timedelta(minutes=20))
    second = await service.refresh_session(refresh_token=first.refresh_token)
    assert second.refresh_token != first.refresh_token
    assert second.account.account_id == first.account.account_id
    assert second.access.expires_at == START + timedelta(minutes=35)
    third = await service.refresh_session(refresh_token=second.refresh_token)
    assert third.refresh_token not in (first.refresh_token, second.refresh_token)


async def test_reusing_a_spent_refresh_token_revokes_the_whole_family(
    service: AccountsService,
) -> None:
    email = await new_player(service)
    stolen = (await service.login(email=email, password=PASSWORD)).refresh_token
    current = (await service.refresh_session(refresh_token=stolen)).refresh_token
    with pytest.raises(Unauthenticated, match="already used"):
        await service.refresh_session(refresh_token=stolen)
    # The newest token of that family is dead too.
    with pytest.raises(Unauthenticated, match="session has ended"):
        await service.refresh_session(refresh_token=current)
    # Another login is a new family and works.
    fresh = await service.login(email=email, password=PASSWORD)
    await service.refresh_session(refresh_token=fresh.refresh_token)


async def test_logout_revokes_the_family_and_leaves_other_sessions(
    service: AccountsService,
) -> None:
    email = await new_player(service)
    phone = await service.login(email=email, password=PASSWORD)
    laptop = await service.login(email=email, password=PASSWORD)
    rotated = await service.refresh_session(refresh_token=phone.refresh_token)
    await service.logout(refresh_token=rotated.refresh_token)
    await service.logout(refresh_token=rotated.refresh_token)  # idempotent
    with pytest.raises(Unauthenticated, match="session has ended"):
        await service.refresh_session(refresh_token=rotated.refresh_token)
    await service.refresh_session(refresh_token=laptop.refresh_token)


async def test_expired_and_unknown_refresh_tokens_are_refused(
    service: AccountsService, clock: ManualClock
) -> None:
    email = await new_player(service)
    signed_in = await service.login(email=email, password=PASSWORD)
    clock.advance(timedelta(days=30))
    with pytest.raises(Unauthenticated, match="expired"):
        await service.refresh_session(refresh_token=signed_in.refresh_token)
    with pytest.raises(Unauthenticated, match="not valid"):
        await service.refresh_session(refresh_token="made-up")
    with pytest.raises(Unauthenticated, match="not valid"):
        await service.logout(refresh_token="made-up")


async def test_only_the_hash_of_a_refresh_token_is_stored(
    service: AccountsService, engine: AsyncEngine
) -> None:
    email = await new_player(service)
    token = (await service.login(email=email, password=PASSWORD)).refresh_token
    async with engine.connect() as connection:
        stored = [r.token_hash for r in await connection.execute(
            text("SELECT token_hash FROM refresh_tokens"))]
    assert token not in stored
    import hashlib

    assert hashlib.sha256(token.encode()).hexdigest() in stored


# --- races -------------------------------------------------------------------------------------


async def test_two_concurrent_refreshes_of_one_token_cannot_both_rotate(
    service: AccountsService,
) -> None:
    email = await new_player(service)
    token = (await service.login(email=email, password=PASSWORD)).refresh_token
    results = await asyncio.gather(
        service.refresh_session(refresh_token=token),
        service.refresh_session(refresh_token=token),
        return_exceptions=True,
    )
    won = [r for r in results if not isinstance(r, BaseException)]
    lost = [r for r in results if isinstance(r, BaseException)]
    assert len(won) == 1 and len(lost) == 1, results
    assert isinstance(lost[0], Unauthenticated) and "already used" in str(lost[0])
    # The second use was a reuse: the winner's new token belongs to a revoked family.
    with pytest.raises(Unauthenticated, match="session has ended"):
        await service.refresh_session(refresh_token=won[0].refresh_token)


async def test_concurrent_wrong_passwords_all_count(service: AccountsService) -> None:
    email = await new_player(service)
    results = await asyncio.gather(
        *(service.login(email=email, password="wrong password!") for _ in range(3)),
        return_exceptions=True,
    )
    assert all(isinstance(r, Unauthenticated) for r in results), results
    await fail_login(service, email, PASSWORD)  # locked
