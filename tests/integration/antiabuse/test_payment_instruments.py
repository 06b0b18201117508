"""Payment instruments link accounts: the real wallet's deposit path, the real broker, the
real anti-abuse service.

Five players deposit real money through the wallet (asking the real geo service) and the
sandbox provider, which confirms each deposit with the fingerprint of the test card the
request names. Two pay with one card: anti-abuse raises a HIGH multi-accounting alert for
the pair, with the shared instrument as evidence, and forbids them the same table. One
pays with a card of their own, two with the anonymous ``sandbox`` method: anti-abuse
reads their deposits and flags none of them.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text

from services.geo.devdata import malta_address
from services.kit.db import make_engine
from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.wallet.v1 import events_pb2 as wallet_events
from tavla.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from tests.support import antiabuse as support
from tests.support.identity import as_player
from tests.support.services import RunningService, new_database, stop_service
from tests.support.wallet import money, new_id, start_wallet, wait_for_balance

VERDICTS = "tavla.antiabuse.v1"
DEPOSITED = wallet_events.Deposited.DESCRIPTOR.full_name
PAIR_RESTRICTED = antiabuse_events.PairRestricted.DESCRIPTOR.full_name


@dataclass
class Stack:
    wallet: RunningService
    wallet_url: str
    antiabuse_url: str
    bootstrap: str


@pytest.fixture(scope="module")
async def stack(
    postgres_server: Any,
    kafka_broker: Any,
    geo_service: RunningService,
    antiabuse: RunningService,
) -> AsyncIterator[Stack]:
    wallet_url = postgres_server.url(new_database(postgres_server, "wallet"))
    wallet = await start_wallet(
        wallet_url, kafka_broker.bootstrap, geo_address=geo_service.address
    )
    yield Stack(wallet, wallet_url, antiabuse.settings.database_url, kafka_broker.bootstrap)
    await stop_service(wallet)


async def rows(url: str, query: str, **params: Any) -> list[Any]:
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(text(query), params)).all())
    finally:
        await engine.dispose()


async def deposit(stub: wallet_pb2_grpc.WalletServiceStub, player: str, method: str) -> None:
    """A real-money deposit through the wallet's API, confirmed by the sandbox provider,
    from a Malta address in a /64 of the player's own (geo publishes where each deposit
    came from, and a shared address would link the players by itself)."""
    address = malta_address(random.randrange(1, 0x10000))
    await stub.Deposit(
        wallet_pb2.DepositRequest(
            amount=money(2500), idempotency_key=new_id("dep"), payment_method=method
        ),
        metadata=as_player(player, address=address),
    )
    await wait_for_balance(stub, player, 2500)


async def deposited_events(stack: Stack, player: str) -> list[tuple[str, bytes]]:
    """(event id, payload) of the player's Deposited events in the wallet's outbox."""
    found = await rows(
        stack.wallet_url,
        "SELECT event_id, payload FROM outbox WHERE key = :k AND ce_type = :t",
        k=player,
        t=DEPOSITED,
    )
    return [(row.event_id, bytes(row.payload)) for row in found]


async def consumed_by_antiabuse(stack: Stack, event_ids: list[str]) -> None:
    """Wait until anti-abuse's facts consumer applied every one of ``event_ids``."""
    async with asyncio.timeout(90):
        while True:
            applied = await rows(
                stack.antiabuse_url,
                "SELECT event_id FROM inbox WHERE event_id = ANY(:ids)",
                ids=event_ids,
            )
            if len(applied) == len(event_ids):
                return
            await asyncio.sleep(0.3)


def _pair(message: Any) -> list[str]:
    return sorted((message.account_id, message.other_account_id))


async def test_a_pair_sharing_a_payment_instrument_is_flagged_and_a_lone_card_is_not(
    stack: Stack, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub
) -> None:
    wallet = wallet_pb2_grpc.WalletServiceStub(stack.wallet.channel)
    tag = uuid.uuid4().hex[:8]
    ann, bob, cat, dan, eve = (f"{name}-{tag}" for name in ("ann", "bob", "cat", "dan", "eve"))
    shared_card, own_card = f"card-shared-{tag}", f"card-own-{tag}"

    # The ones who must not be flagged deposit first, so their events are not behind the pair's.
    await deposit(wallet, cat, own_card)
    await deposit(wallet, dan, "sandbox")
    await deposit(wallet, eve, "sandbox")
    await deposit(wallet, ann, shared_card)
    await deposit(wallet, bob, shared_card)

    # The wallet kept each confirmed deposit's fingerprint and published it; never the method.
    published = {p: await deposited_events(stack, p) for p in (ann, bob, cat, dan, eve)}
    fingerprints = {
        p: wallet_events.Deposited.FromString(payload).instrument_fingerprint
        for p, [(_, payload)] in published.items()
    }
    assert fingerprints[ann] and fingerprints[ann] == fingerprints[bob]
    assert fingerprints[cat] and fingerprints[cat] != fingerprints[ann]
    assert fingerprints[dan] == fingerprints[eve] == ""  # the anonymous method names no card
    assert all(tag not in value for value in fingerprints.values())
    stored = await rows(
        stack.wallet_url,
        "SELECT player_id, instrument_fingerprint FROM payments WHERE player_id = ANY(:p)",
        p=[ann, bob, cat, dan, eve],
    )
    assert {row.player_id: row.instrument_fingerprint or "" for row in stored} == fingerprints

    # Anti-abuse: the pair is one person as far as the evidence goes.
    alert = await support.wait_for_alert(
        stub, ann, [ann, bob], antiabuse_events.SEVERITY_HIGH
    )
    assert alert.detector == "multi_accounting"
    [evidence] = [e for e in alert.evidence if e.kind == "shared_payment"]
    assert evidence.details["accounts"] == ",".join(sorted((ann, bob)))
    assert evidence.details["value"] == f"sandbox:{fingerprints[ann]}"
    verdicts = await support.read_topic(
        stack.bootstrap,
        VERDICTS,
        lambda ce_type, value: antiabuse_events.PairRestricted.FromString(value)
        if ce_type == PAIR_RESTRICTED
        else None,
        lambda found: any(_pair(verdict) == sorted((ann, bob)) for verdict in found),
    )
    [verdict] = [v for v in verdicts if _pair(v) == sorted((ann, bob))]
    assert isinstance(verdict, antiabuse_events.PairRestricted)
    assert verdict.reason == antiabuse_events.PAIR_RESTRICTION_REASON_LINKED_ACCOUNTS
    assert verdict.alert_id == alert.alert_id

    # Everyone else's deposit was read, and none of them is flagged.
    others = [event_id for p in (cat, dan, eve) for event_id, _ in published[p]]
    await consumed_by_antiabuse(stack, others)
    for player in (cat, dan, eve):
        assert await support.alerts_about(stub, player) == [], player
    sightings = await rows(
        stack.antiabuse_url,
        "SELECT account_id FROM sightings WHERE kind = 'payment' AND account_id = ANY(:p)",
        p=[cat, dan, eve],
    )
    assert [row.account_id for row in sightings] == [cat]
