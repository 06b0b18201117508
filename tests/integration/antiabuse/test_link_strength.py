"""Strangers behind one NAT are not one person; a shared device is (real PostgreSQL, broker
and anti-abuse service with its default automatic-freeze policy, chip_dumping:CRITICAL).

- three pairs of strangers, each behind one NAT: the same public address, the same /64,
  the same carrier-grade NAT address (100.64/10), each pair playing ten money games of
  15.00 where one wins eight (56/1024 = 0.055 by fair play between equals): no CRITICAL
  alert, no chip-dumping alert, no case (so no automatic freeze) and no PairRestricted
  recorded or published (matchmaking still seats them together), and no multi-accounting
  alert either: an address or a network is context, never an alert by itself;
- three players at an internet café (one address): two take turns at one computer while
  the third sits at the next, and the two play ten games the same way: a shared
  computer, so no alert, no case and no restriction either;
- a pair sharing a device who dumps four games one way: chip dumping CRITICAL, both
  wallets frozen by the policy, and the pair restricted.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, wait_for_alert
from tests.support.kafka import publish
from tests.support.matchmaking import scalar
from tests.support.services import RunningService

DUMPING = antiabuse_events.ALERT_KIND_CHIP_DUMPING


def accounts(n: int) -> list[str]:
    return sorted(str(uuid.uuid4()) for _ in range(n))


def logins(pair: list[str], first_address: str, second_address: str) -> list[Any]:
    first, second = pair
    return [
        support.registered(first, f"{first}@example.com", "ann"),
        support.registered(second, f"{second}@example.com", "bob"),
        support.logged_in(first, f"dev-{uuid.uuid4().hex[:8]}", first_address),
        support.logged_in(second, f"dev-{uuid.uuid4().hex[:8]}", second_address),
    ]


def ten_fair_looking_games(winner: str, loser: str) -> list[Any]:
    results = [(winner, loser)] * 8 + [(loser, winner)] * 2
    random.shuffle(results)
    return [e for won, lost in results for e in support.played(str(uuid.uuid4()), won, lost, 1500)]


async def severities(stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, account: str) -> list[int]:
    return sorted(a.severity for a in await alerts_about(stub, account))


async def cases_of(stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, account: str) -> list[Any]:
    answer = await stub.ListCases(
        antiabuse_pb2.ListCasesRequest(account_id=account), metadata=support.officer()
    )
    return list(answer.cases)


async def test_strangers_behind_one_nat_who_play_for_money_are_left_alone(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    address_pair, v6_pair, cgnat_pair = accounts(2), accounts(2), accounts(2)
    net = support.fresh_network()
    v6 = f"2001:db8:{random.randrange(1, 0xFFFF):x}:{random.randrange(1, 0xFFFF):x}"
    cgnat = f"100.{random.randrange(64, 128)}.{random.randrange(256)}.{random.randrange(1, 255)}"
    await publish(
        bootstrap,
        logins(address_pair, f"{net}.7", f"{net}.7")
        + logins(v6_pair, f"{v6}::10", f"{v6}::20")
        + logins(cgnat_pair, cgnat, cgnat),
    )
    # The café: a at computer 1 and b at computer 2, then c at computer 1.
    cafe, cafe_address = accounts(3), f"{support.fresh_network()}.50"
    pc_1, pc_2 = f"cafe-{uuid.uuid4().hex[:8]}", f"cafe-{uuid.uuid4().hex[:8]}"
    await publish(
        bootstrap,
        [support.registered(a, f"{a}@example.com", "cat") for a in cafe]
        + [
            support.logged_in(cafe[0], pc_1, cafe_address),
            support.logged_in(cafe[1], pc_2, cafe_address),
        ],
    )
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    await publish(bootstrap, [support.logged_in(cafe[2], pc_1, cafe_address)])
    # Linked first (the streams are read in no set order across topics) ...
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    assert await severities(stub, cafe[0]) == []
    assert await severities(stub, address_pair[0]) == []
    assert await severities(stub, v6_pair[0]) == []
    # ... then each pair's ten games.
    games = [
        ten_fair_looking_games(p[0], p[1])
        for p in (address_pair, v6_pair, cgnat_pair, [cafe[0], cafe[2]])
    ]
    await publish(bootstrap, [e for pair_games in games for e in pair_games])
    await support.all_consumed(bootstrap)
    # Having played each other for money changes nothing: strangers on one address meet.
    assert await severities(stub, address_pair[0]) == []
    assert await severities(stub, v6_pair[0]) == []

    strangers = [*address_pair, *v6_pair, *cgnat_pair, *cafe]
    for account in cafe:  # not even a multi-accounting alert
        assert await severities(stub, account) == []
    for account in strangers:
        raised = await alerts_about(stub, account)
        assert all(a.severity < antiabuse_events.SEVERITY_CRITICAL for a in raised), raised
        assert all(a.kind != DUMPING for a in raised), raised
        assert not any(a.accounts_frozen for a in raised)
        assert await cases_of(stub, account) == []  # the policy opened nothing, froze nobody
    assert await alerts_about(stub, cgnat_pair[0]) == []  # a carrier NAT links nobody

    # A pair sharing a device who dumps is still caught, frozen and kept apart; its verdict
    # is the only one on the topic for any of these pairs.
    giver, receiver = accounts(2)
    shared = f"dev-{uuid.uuid4().hex[:8]}"
    await publish(
        bootstrap,
        [
            support.registered(giver, f"{giver}@example.com", "gia"),
            support.registered(receiver, f"{receiver}@example.com", "rex"),
            support.logged_in(giver, shared, f"{support.fresh_network()}.1"),
            support.logged_in(receiver, shared, f"{support.fresh_network()}.2"),
        ],
    )
    await wait_for_alert(stub, giver, [giver, receiver], antiabuse_events.SEVERITY_HIGH)
    await publish(
        bootstrap,
        [e for _ in range(4) for e in support.played(str(uuid.uuid4()), receiver, giver, 1500)],
    )
    async with asyncio.timeout(90):
        while True:
            dumped = [
                a
                for a in await alerts_about(stub, giver)
                if a.kind == DUMPING and a.severity == antiabuse_events.SEVERITY_CRITICAL
            ]
            if dumped and dumped[0].accounts_frozen:
                break
            await asyncio.sleep(0.3)
    # The restrictions recorded (each published as a PairRestricted in the same
    # transaction): the device pair's only.
    restricted = await scalar(
        antiabuse.settings.database_url,
        "SELECT string_agg(low_account_id || ':' || high_account_id, ',') FROM pair_restrictions"
        " WHERE low_account_id = ANY(:ids) OR high_account_id = ANY(:ids)",
        ids=[*strangers, giver, receiver],
    )
    assert restricted == f"{giver}:{receiver}"
