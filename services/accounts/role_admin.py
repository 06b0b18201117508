"""The operator's role change (``tavla accounts grant-role``): one unit of work on the
accounts database, with its audit row and RoleChanged event (see ``roles.py``)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import async_sessionmaker

from services.accounts.domain import TOPIC, normalise_email
from services.accounts.roles import check_role
from services.accounts.store import AccountsUnitOfWork
from services.kit.clock import Clock, SystemClock
from services.kit.db import make_engine
from services.kit.errors import NotFound
from tavla.accounts.v1 import events_pb2


async def change_role(
    url: str, email: str, role: str, *, granted: bool, by: str, clock: Clock | None = None
) -> str:
    """Grant or revoke ``role`` for the account with ``email``; what happened, in words."""
    check_role(role)
    address = normalise_email(email)
    clock = clock or SystemClock()
    engine = make_engine(url, pool_size=1)
    try:
        sessions = async_sessionmaker(engine, expire_on_commit=False)
        async with AccountsUnitOfWork(sessions, source="accounts", clock=clock) as uow:
            account = await uow.accounts.get_by_email(address)
            if account is None:
                raise NotFound(f"no account with the email {address}")
            now = clock.now()
            changed = await uow.roles.change(account.account_id, role, granted=granted, by=by,
                                             at=now)
            if changed:
                fact = events_pb2.RoleChanged(account_id=account.account_id, role=role,
                                              granted=granted, changed_by=by)
                fact.occurred_at.FromDatetime(now)
                uow.publish(TOPIC, account.account_id, fact)
            await uow.commit()
    finally:
        await engine.dispose()
    verb = "granted" if granted else "revoked"
    state = verb if changed else f"already {verb}"
    return f"role {role} {state} for account {account.account_id} ({address}) by {by}"
