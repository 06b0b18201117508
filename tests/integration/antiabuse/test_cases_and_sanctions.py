"""Cases and sanctions on the real PostgreSQL and broker, with the real accounts, anti-abuse,
wallet and matchmaking services in-process:

- an operator makes an account a compliance officer with ``tavla accounts grant-role``
  (the real command); the officer's access token, issued by the real accounts
  service at login, carries the role; a player's does not and is refused;
- two accounts logging in from one device raise a multi-accounting alert; the
  officer opens a case from it, assigns and notes it, and resolves it as
  sanctioned: terminate one, freeze the other's wallet, forbid the pair (the freeze
  and the pair at once, the termination once a second officer approves it);
- then the terminated account cannot log in or refresh, both wallets are frozen,
  matchmaking holds the pair as forbidden, and the person cannot register again
  (same mailbox with other case, dots and a +tag; another mailbox from the same
  device), while a stranger still can;
- the sanction events replayed (same ids, and new ids) change nothing: one
  AccountTerminated, one AccountFrozen per account, the same blocklist.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import jwt
import pytest
from google.protobuf.message import Message
from sqlalchemy import text

from services.antiabuse.main import wiring as antiabuse_wiring
from services.kit.db import make_engine
from services.kit.events.envelope import Envelope
from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.compliance import grant_role, sanctions_consumed
from tests.support.identity import PLAYER_KEY_FILE
from tests.support.kafka import publish
from tests.support.matchmaking import start_matchmaking
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_accounts,
    start_service,
    stop_service,
)
from tests.support.wallet import start_wallet

PASSWORD = "correct horse battery"
VERDICTS = "tavla.antiabuse.v1"
SANCTIONED = antiabuse_events.AccountSanctioned.DESCRIPTOR.full_name
SANCTION = antiabuse_pb2.Sanction
CASE_SANCTIONED = antiabuse_pb2.CASE_STATUS_SANCTIONED


@dataclass
class Stack:
    accounts: RunningService
    antiabuse: RunningService
    wallet: RunningService
    matchmaking: RunningService
    urls: dict[str, str]
    bootstrap: str


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any, kafka_broker: Any, module_monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    bootstrap = kafka_broker.bootstrap
    urls = {
        name: postgres_server.url(new_database(postgres_server, name))
        for name in ("accounts", "antiabuse", "wallet", "mm")
    }
    # Accounts signs with the key the other services verify test tokens with.
    accounts = await start_accounts(urls["accounts"], bootstrap, PLAYER_KEY_FILE,
                                    module_monkeypatch)
    antiabuse = await start_service(
        fast_settings("antiabuse", urls["antiabuse"], bootstrap), antiabuse_wiring
    )
    wallet = await start_wallet(urls["wallet"], bootstrap)
    matchmaking = await start_matchmaking(
        urls["mm"], bootstrap, wallet_address=wallet.address, game_address="127.0.0.1:9",
        geo_address="",
    )
    yield Stack(accounts, antiabuse, wallet, matchmaking, urls, bootstrap)
    for service in (matchmaking, wallet, antiabuse, accounts):
        await stop_service(service)


def device(device_id: str) -> list[tuple[str, str]]:
    return [("x-tavla-device-id", device_id)]


async def register(
    accounts: accounts_pb2_grpc.AccountsServiceStub, email: str, device_id: str = ""
) -> accounts_pb2.Account:
    return await accounts.Register(
        accounts_pb2.RegisterRequest(
            email=email, password=PASSWORD, display_name=f"p{uuid.uuid4().hex[:10]}",
            residence="MT", date_of_birth="1990-04-21",
        ),
        metadata=device(device_id) if device_id else None,
    )


async def login(
    accounts: accounts_pb2_grpc.AccountsServiceStub, email: str, device_id: str = ""
) -> accounts_pb2.LoginResponse:
    return await accounts.Login(
        accounts_pb2.LoginRequest(email=email, password=PASSWORD),
        metadata=device(device_id) if device_id else None,
    )


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def scalar(url: str, query: str, **params: Any) -> Any:
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text(query), params)).scalar()
    finally:
        await engine.dispose()


async def eventually(url: str, query: str, expected: Any, **params: Any) -> None:
    async with asyncio.timeout(90):
        while await scalar(url, query, **params) != expected:
            await asyncio.sleep(0.3)


async def wait_for_alert(
    officer: antiabuse_pb2_grpc.AntiAbuseServiceStub, token: str, subjects: set[str]
) -> antiabuse_events.ComplianceAlert:
    async with asyncio.timeout(90):
        while True:
            found = await officer.ListAlerts(
                antiabuse_pb2.ListAlertsRequest(account_id=min(subjects)), metadata=bearer(token)
            )
            for alert in found.alerts:
                if set(alert.subject_account_ids) == subjects:
                    return alert
            await asyncio.sleep(0.3)


async def test_an_officer_terminates_an_account_and_the_person_cannot_come_back(
    stack: Stack,
) -> None:
    accounts = accounts_pb2_grpc.AccountsServiceStub(stack.accounts.channel)
    anti = antiabuse_pb2_grpc.AntiAbuseServiceStub(
        grpc.aio.insecure_channel(stack.antiabuse.address)
    )
    tag = uuid.uuid4().hex[:8]

    # An operator makes an account a compliance officer; the role is in its next token.
    officer_email = f"officer-{tag}@example.com"
    officer = await register(accounts, officer_email)
    said = await grant_role(stack.urls["accounts"], officer_email.upper())
    assert f"role compliance granted for account {officer.account_id}" in said
    assert "already granted" in await grant_role(stack.urls["accounts"], officer_email)
    officer_token = (await login(accounts, officer_email)).access_token
    claims = jwt.decode(officer_token, options={"verify_signature": False})
    assert claims["roles"] == ["compliance"] and claims["sub"] == officer.account_id
    audit = await scalar(stack.urls["accounts"],
                         "SELECT count(*) FROM role_changes WHERE account_id = :a",
                         a=officer.account_id)
    assert audit == 1  # the second, idempotent, grant changed nothing and logged nothing

    # Two accounts of one person: one device.
    shared = f"dev-{tag}"
    ann_email = f"ann.smith.{tag}@gmail.com"
    ann = await register(accounts, ann_email, shared)
    bob = await register(accounts, f"bob-{tag}@example.com")
    ann_login = await login(accounts, ann_email, shared)
    bob_login = await login(accounts, f"bob-{tag}@example.com", shared)
    assert "roles" not in jwt.decode(bob_login.access_token, options={"verify_signature": False})
    pair = {ann.account_id, bob.account_id}
    alert = await wait_for_alert(anti, officer_token, pair)

    # A player is refused every case call, even one the alert is about.
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await anti.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                            metadata=bearer(bob_login.access_token))
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED

    case = await anti.OpenCase(
        antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id], note="one device"),
        metadata=bearer(officer_token),
    )
    assert set(case.subject_account_ids) == pair
    assert case.opened_by == officer.account_id
    with pytest.raises(grpc.aio.AioRpcError) as twice:
        await anti.OpenCase(antiabuse_pb2.OpenCaseRequest(alert_ids=[alert.alert_id]),
                            metadata=bearer(officer_token))
    assert twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert case.case_id in (twice.value.details() or "")
    await anti.AssignCase(antiabuse_pb2.AssignCaseRequest(
        case_id=case.case_id, assignee_account_id=officer.account_id),
        metadata=bearer(officer_token))
    await anti.AddCaseNote(antiabuse_pb2.AddCaseNoteRequest(
        case_id=case.case_id, note="same phone, same evening"), metadata=bearer(officer_token))
    # A sanction may name only the case's subjects.
    with pytest.raises(grpc.aio.AioRpcError) as stranger:
        await anti.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
            case_id=case.case_id, outcome=CASE_SANCTIONED, note="x",
            sanctions=[SANCTION(kind=antiabuse_events.SANCTION_KIND_FREEZE_WALLET,
                                account_id=officer.account_id)],
        ), metadata=bearer(officer_token))
    assert stranger.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    resolution = antiabuse_pb2.ResolveCaseRequest(
        case_id=case.case_id, outcome=CASE_SANCTIONED, note="multi-accounting confirmed",
        sanctions=[
            SANCTION(kind=antiabuse_events.SANCTION_KIND_TERMINATE_ACCOUNT,
                     account_id=ann.account_id),
            SANCTION(kind=antiabuse_events.SANCTION_KIND_FREEZE_WALLET,
                     account_id=bob.account_id),
            SANCTION(kind=antiabuse_events.SANCTION_KIND_FORBID_PAIR,
                     account_id=bob.account_id, other_account_id=ann.account_id),
        ],
    )
    proposed = await anti.ResolveCase(resolution, metadata=bearer(officer_token))
    # The freeze and the forbidden pair at once; the termination waits for a second officer.
    assert proposed.status == antiabuse_pb2.CASE_STATUS_OPEN
    assert sorted((s.kind, s.awaiting_approval) for s in proposed.sanctions) == [
        (antiabuse_events.SANCTION_KIND_FREEZE_WALLET, False),
        (antiabuse_events.SANCTION_KIND_FORBID_PAIR, False),
        (antiabuse_events.SANCTION_KIND_TERMINATE_ACCOUNT, True),
    ]
    second_email = f"second-officer-{tag}@example.com"
    second = await register(accounts, second_email)
    await grant_role(stack.urls["accounts"], second_email)
    second_token = (await login(accounts, second_email)).access_token
    resolved = await anti.ApproveSanctions(antiabuse_pb2.ApproveSanctionsRequest(
        case_id=case.case_id, note="agreed"), metadata=bearer(second_token))
    assert resolved.status == CASE_SANCTIONED and len(resolved.sanctions) == 3
    assert [(line.action, line.actor) for line in resolved.log] == [
        (action, officer.account_id) for action in
        ("opened", "assigned", "note", "sanction", "sanction", "proposed")
    ] + [(action, second.account_id) for action in ("approved", "sanction", "resolved")]
    assert [line.sequence for line in resolved.log] == list(range(1, 10))
    # The same resolution again is the same call repeated: nothing new.
    assert await anti.ResolveCase(resolution, metadata=bearer(officer_token)) == resolved
    listed = await anti.ListAlerts(antiabuse_pb2.ListAlertsRequest(account_id=ann.account_id),
                                   metadata=bearer(officer_token))
    confirmed = next(a for a in listed.alerts if a.alert_id == alert.alert_id)
    assert confirmed.status == antiabuse_events.ALERT_STATUS_CONFIRMED

    # Accounts: closed, no login, no refresh.
    await eventually(stack.urls["accounts"],
                     "SELECT status FROM accounts WHERE account_id = :a", "closed",
                     a=ann.account_id)
    with pytest.raises(grpc.aio.AioRpcError) as no_login:
        await login(accounts, ann_email)
    assert no_login.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.aio.AioRpcError) as no_refresh:
        await accounts.RefreshSession(
            accounts_pb2.RefreshSessionRequest(refresh_token=ann_login.refresh_token))
    assert no_refresh.value.code() == grpc.StatusCode.UNAUTHENTICATED  # its session was ended
    # Bob was only frozen in the wallet: he still logs in.
    await login(accounts, f"bob-{tag}@example.com")

    # Wallet: both frozen. Matchmaking: the pair forbidden for confirmed abuse.
    for account in (ann.account_id, bob.account_id):
        await eventually(stack.urls["wallet"],
                         "SELECT frozen_reason IS NOT NULL FROM players WHERE player_id = :a",
                         True, a=account)
    low, high = sorted(pair)
    await eventually(
        stack.urls["mm"],
        "SELECT count(*) FROM forbidden_pairs WHERE low_account_id = :l AND high_account_id = :h"
        " AND lifted_at IS NULL AND reason = 'confirmed_abuse'", 1, l=low, h=high,
    )

    # The person cannot register again: the mailbox however spelled, or the device.
    for email, device_id in [
        (f"Ann.Smith.{tag.upper()}+again@GoogleMail.com", ""),
        (f"a.n.n.s.m.i.t.h.{tag}@gmail.com", ""),
        (f"someone-else-{tag}@example.com", shared),
    ]:
        with pytest.raises(grpc.aio.AioRpcError) as again:
            await register(accounts, email, device_id)
        assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION, email
        assert "terminated" in (again.value.details() or "")
    # A stranger is not caught by it.
    await register(accounts, f"stranger-{tag}@gmail.com", f"dev-other-{tag}")

    # Exactly once under replay: the sanction events again, with their ids and with new ones.
    events = await support.read_topic(
        stack.bootstrap, VERDICTS, _sanctions_of(pair), lambda got: len(got) >= 2
    )
    blocked = await scalar(stack.urls["accounts"],
                           "SELECT count(*) FROM blocked_identifiers WHERE account_id = :a",
                           a=ann.account_id)
    assert blocked == 2  # the mailbox and the device (no address came through a gateway)
    replayed = [
        Envelope.wrap(topic=VERDICTS, key=e.account_id, message=e, source="antiabuse",
                      now=e.occurred_at.ToDatetime())
        for e in events
        if isinstance(e, antiabuse_events.AccountSanctioned)
    ]
    await publish(stack.bootstrap, replayed + replayed)
    await sanctions_consumed(stack.bootstrap, ["accounts.sanctions", "wallet.sanctions"])
    terminated = await scalar(
        stack.urls["accounts"],
        "SELECT count(*) FROM outbox WHERE ce_type = 'tavla.accounts.v1.AccountTerminated'"
        " AND key = :a", a=ann.account_id)
    assert terminated == 1
    for account in pair:
        frozen = await scalar(
            stack.urls["wallet"],
            "SELECT count(*) FROM outbox WHERE ce_type = 'tavla.wallet.v1.AccountFrozen'"
            " AND key = :a", a=account)
        assert frozen == 1, account
    assert await scalar(stack.urls["accounts"],
                        "SELECT count(*) FROM blocked_identifiers WHERE account_id = :a",
                        a=ann.account_id) == 2


def _sanctions_of(accounts: set[str]) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != SANCTIONED:
            return None
        sanction = antiabuse_events.AccountSanctioned.FromString(payload)
        return sanction if sanction.account_id in accounts else None

    return decode


async def test_critical_chip_dumping_freezes_both_wallets_at_once_and_waits_for_a_person(
    stack: Stack,
) -> None:
    """The default policy (chip_dumping:CRITICAL): a case opened by ``policy``, a freeze of
    each subject, the alert published again with accounts_frozen; nothing else."""
    anti = antiabuse_pb2_grpc.AntiAbuseServiceStub(
        grpc.aio.insecure_channel(stack.antiabuse.address)
    )
    giver, receiver = sorted(str(uuid.uuid4()) for _ in range(2))
    shared = f"dev-{uuid.uuid4().hex[:8]}"
    net = support.fresh_network()
    facts = [
        support.registered(giver, f"{giver}@example.com", "gia"),
        support.registered(receiver, f"{receiver}@example.com", "rex"),
        support.logged_in(giver, shared, f"{net}.1"),
        support.logged_in(receiver, shared, f"{net}.2"),
    ]
    await publish(stack.bootstrap, facts)
    # Linked first (the streams are read in no set order across topics) ...
    await wait_for_alert(anti, support.officer()[0][1].removeprefix("Bearer "),
                         {giver, receiver})
    # ... then four games the giver loses, 15.00 each: 60.00 one way between them.
    await publish(stack.bootstrap, [
        e for _ in range(4) for e in support.played(str(uuid.uuid4()), receiver, giver, 1500)
    ])

    async with asyncio.timeout(90):
        while True:
            found = await anti.ListAlerts(
                antiabuse_pb2.ListAlertsRequest(
                    account_id=giver, kind=antiabuse_events.ALERT_KIND_CHIP_DUMPING,
                    min_severity=antiabuse_events.SEVERITY_CRITICAL),
                metadata=support.officer())
            if found.alerts and found.alerts[0].accounts_frozen:
                break
            await asyncio.sleep(0.3)
    alert = found.alerts[0]
    assert alert.status == antiabuse_events.ALERT_STATUS_OPEN  # a person still decides
    case_id = await scalar(stack.urls["antiabuse"],
                           "SELECT case_id FROM case_alerts WHERE alert_id = :a",
                           a=alert.alert_id)
    case = await anti.GetCase(antiabuse_pb2.GetCaseRequest(case_id=case_id),
                              metadata=support.officer())
    assert case.status == antiabuse_pb2.CASE_STATUS_OPEN and case.opened_by == "policy"
    assert sorted((s.kind, s.account_id) for s in case.sanctions) == [
        (antiabuse_events.SANCTION_KIND_FREEZE_WALLET, giver),
        (antiabuse_events.SANCTION_KIND_FREEZE_WALLET, receiver),
    ]
    for account in (giver, receiver):
        await eventually(stack.urls["wallet"],
                         "SELECT frozen_reason LIKE 'compliance freeze%' FROM players"
                         " WHERE player_id = :a", True, a=account)
    # Not a suspension or a termination: accounts applied nothing.
    await sanctions_consumed(stack.bootstrap, ["accounts.sanctions"])
    assert await scalar(stack.urls["accounts"],
                        "SELECT count(*) FROM applied_sanctions WHERE account_id IN (:g, :r)",
                        g=giver, r=receiver) == 0
    # A person reviews it and clears it: the alert is dismissed, no sanction is added, and a
    # sanctioned resolution of the cleared case is refused.
    cleared = await anti.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
        case_id=case_id, outcome=antiabuse_pb2.CASE_STATUS_CLEARED, note="a coaching pair"),
        metadata=support.officer("officer-2"))
    assert cleared.status == antiabuse_pb2.CASE_STATUS_CLEARED and len(cleared.sanctions) == 2
    assert (cleared.log[-1].actor, cleared.log[-1].action) == ("officer-2", "resolved")
    with pytest.raises(grpc.aio.AioRpcError) as reopened:
        await anti.ResolveCase(antiabuse_pb2.ResolveCaseRequest(
            case_id=case_id, outcome=CASE_SANCTIONED, note="changed my mind",
            sanctions=[SANCTION(kind=antiabuse_events.SANCTION_KIND_TERMINATE_ACCOUNT,
                                account_id=giver)]), metadata=support.officer("officer-2"))
    assert reopened.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    listed = await anti.ListAlerts(antiabuse_pb2.ListAlertsRequest(
        account_id=giver, kind=antiabuse_events.ALERT_KIND_CHIP_DUMPING,
        min_severity=antiabuse_events.SEVERITY_CRITICAL), metadata=support.officer())
    assert listed.alerts[0].status == antiabuse_events.ALERT_STATUS_DISMISSED
    assert listed.alerts[0].accounts_frozen  # lifting a freeze is the operator's act
