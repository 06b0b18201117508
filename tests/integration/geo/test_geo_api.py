"""The geo service over gRPC: real server, real service credentials, MaxMind-format files.

The databases are built with mmdb-writer from documentation ranges
(``services/geo/devdata.py``); every expected decision is written out
by hand from the seed's six states and the policy in services/geo/README.md.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import text

from services.geo.config import GeoSettings
from services.geo.devdata import (
    CITY,
    FLORIDA_IP,
    FLORIDA_IPV6,
    MALTA_IP,
    NEW_JERSEY_IP,
    NEW_JERSEY_VPN_IP,
    UNPLACED_IP,
    write_anonymous,
    write_city,
)
from services.geo.main import build_service, wiring
from services.kit.db import make_engine
from tavla.geo.v1 import events_pb2, geo_pb2, geo_pb2_grpc
from tests.support.identity import as_player, bare_channel
from tests.support.kafka import keyed_records
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)


@pytest.fixture
def stub(geo_service: RunningService) -> geo_pb2_grpc.GeoServiceStub:
    return geo_pb2_grpc.GeoServiceStub(geo_service.channel)


async def check(
    stub: geo_pb2_grpc.GeoServiceStub,
    ip: str,
    purpose: int,
    declared: str = "US-NJ",
    **extra: Any,
) -> geo_pb2.LocationDecision:
    request = geo_pb2.CheckLocationRequest(
        ip_address=ip, purpose=purpose, declared_residence=declared, **extra
    )
    return await stub.CheckLocation(request)


def codes(decision: geo_pb2.LocationDecision) -> list[str]:
    return [reason.code for reason in decision.reasons]


@pytest.mark.parametrize(
    "purpose", [geo_pb2.PURPOSE_DEPOSIT, geo_pb2.PURPOSE_PLAY_REAL_MONEY, geo_pb2.PURPOSE_WITHDRAW]
)
async def test_a_florida_address_is_refused_for_real_money(stub: Any, purpose: int) -> None:
    decision = await check(stub, FLORIDA_IP, purpose)
    assert decision.decision == geo_pb2.DECISION_BLOCK
    assert codes(decision) == ["location_restricted"]
    assert (decision.country_code, decision.region_code) == ("US", "US-FL")
    assert decision.rules_version == "tavla-2026-12"
    assert "Florida" in decision.reasons[0].message
    assert decision.check_id


async def test_a_florida_ipv6_address_is_refused_at_the_table(stub: Any) -> None:
    decision = await check(stub, FLORIDA_IPV6, geo_pb2.PURPOSE_PLAY_REAL_MONEY)
    assert (decision.decision, codes(decision)) == (geo_pb2.DECISION_BLOCK, ["location_restricted"])
    assert decision.region_code == "US-FL"


async def test_a_florida_address_may_play_for_play_money(stub: Any) -> None:
    decision = await check(stub, FLORIDA_IP, geo_pb2.PURPOSE_PLAY_MONEY)
    assert (decision.decision, codes(decision)) == (geo_pb2.DECISION_ALLOW, [])


async def test_a_montana_resident_is_refused_and_a_malta_resident_allowed(stub: Any) -> None:
    montana = await check(stub, MALTA_IP, geo_pb2.PURPOSE_DEPOSIT, declared="US-MT")
    assert (montana.decision, codes(montana)) == (geo_pb2.DECISION_BLOCK, ["residence_restricted"])
    assert montana.evidence.declared_residence == "US-MT"
    malta = await check(stub, MALTA_IP, geo_pb2.PURPOSE_DEPOSIT, declared="MT")
    assert (malta.decision, codes(malta)) == (geo_pb2.DECISION_ALLOW, [])
    assert (malta.country_code, malta.region_code) == ("MT", "")


async def test_a_vpn_is_refused_for_real_money_and_flagged_as_evidence(stub: Any) -> None:
    decision = await check(stub, NEW_JERSEY_VPN_IP, geo_pb2.PURPOSE_DEPOSIT)
    assert (decision.decision, codes(decision)) == (geo_pb2.DECISION_BLOCK, ["anonymous_vpn"])
    evidence = decision.evidence
    assert evidence.anonymous_network_checked
    assert (evidence.is_anonymous, evidence.is_anonymous_vpn) == (True, True)
    assert evidence.ip_address == NEW_JERSEY_VPN_IP


async def test_a_vpn_at_login_is_allowed_for_review(stub: Any) -> None:
    decision = await check(stub, NEW_JERSEY_VPN_IP, geo_pb2.PURPOSE_LOGIN)
    assert (decision.decision, codes(decision)) == (geo_pb2.DECISION_REVIEW, ["anonymous_vpn"])


async def test_an_unknown_address_is_refused_for_real_money_and_allowed_for_play_money(
    stub: Any,
) -> None:
    real = await check(stub, UNPLACED_IP, geo_pb2.PURPOSE_PLAY_REAL_MONEY)
    assert (real.decision, codes(real)) == (geo_pb2.DECISION_BLOCK, ["location_unplaced"])
    assert (real.country_code, real.region_code) == ("", "")
    play = await check(stub, UNPLACED_IP, geo_pb2.PURPOSE_PLAY_MONEY)
    assert (play.decision, codes(play)) == (geo_pb2.DECISION_ALLOW, [])


async def test_a_new_jersey_resident_at_home_may_deposit(stub: Any) -> None:
    decision = await check(stub, NEW_JERSEY_IP, geo_pb2.PURPOSE_DEPOSIT)
    assert (decision.decision, codes(decision)) == (geo_pb2.DECISION_ALLOW, [])
    assert decision.evidence.anonymous_network_checked
    assert not decision.evidence.is_anonymous


async def test_the_device_location_is_kept_as_evidence(stub: Any) -> None:
    device = geo_pb2.DeviceLocation(latitude=40.2, longitude=-74.7, accuracy_meters=25.0)
    decision = await check(stub, NEW_JERSEY_IP, geo_pb2.PURPOSE_LOGIN, device_location=device)
    assert decision.evidence.device_location == device


@pytest.mark.parametrize(
    ("ip", "purpose", "declared", "field"),
    [
        ("192.0.2.999", geo_pb2.PURPOSE_DEPOSIT, "US-NJ", "ip_address"),
        ("", geo_pb2.PURPOSE_DEPOSIT, "US-NJ", "ip_address"),
        (NEW_JERSEY_IP, geo_pb2.PURPOSE_DEPOSIT, "FL", "declared_residence"),
        (NEW_JERSEY_IP, geo_pb2.PURPOSE_DEPOSIT, "US-XX", "declared_residence"),
        (NEW_JERSEY_IP, geo_pb2.PURPOSE_UNSPECIFIED, "US-NJ", "purpose"),
    ],
)
async def test_bad_input_is_invalid_argument_naming_the_field(
    stub: Any, ip: str, purpose: int, declared: str, field: str
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await check(stub, ip, purpose, declared=declared)
    assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert field in (raised.value.details() or "")


async def test_check_location_needs_a_service_credential(geo_service: RunningService) -> None:
    async with bare_channel(geo_service.address) as channel:
        stub = geo_pb2_grpc.GeoServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await check(stub, NEW_JERSEY_IP, geo_pb2.PURPOSE_DEPOSIT)
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_list_jurisdictions_serves_the_seed_states_and_blocked_countries(
    stub: Any,
) -> None:
    response = await stub.ListJurisdictions(
        geo_pb2.ListJurisdictionsRequest(), metadata=as_player("p-geo")
    )
    assert response.rules_version == "tavla-2026-12"
    by_code = {j.code: j for j in response.jurisdictions}
    assert set(by_code) == {
        "CU", "IR", "KP", "SY", "US-AZ", "US-CT", "US-FL", "US-LA", "US-MT", "US-VT",
    }  # fmt: skip
    florida = by_code["US-FL"]
    assert (florida.name, florida.real_money_allowed, florida.play_money_allowed) == (
        "Florida",
        False,
        True,
    )
    assert list(florida.blocked_purposes) == [
        geo_pb2.PURPOSE_DEPOSIT,
        geo_pb2.PURPOSE_WITHDRAW,
        geo_pb2.PURPOSE_PLAY_REAL_MONEY,
    ]
    assert (by_code["IR"].real_money_allowed, by_code["IR"].play_money_allowed) == (False, False)


async def test_a_database_replaced_on_disk_is_used_without_dropping_calls(
    postgres_server: Any, kafka_broker: Any, tmp_path: Path
) -> None:
    city = write_city(tmp_path / "city.mmdb")
    geo = GeoSettings(city, write_anonymous(tmp_path / "anonymous.mmdb"), reload_seconds=0.1)
    service = build_service(geo)
    database = postgres_server.url(new_database(postgres_server, "geo"))
    running = await start_service(
        fast_settings("geo", database, kafka_broker.bootstrap),
        lambda runtime: wiring(runtime, service, geo.reload_seconds),
    )
    try:
        stub = geo_pb2_grpc.GeoServiceStub(running.channel)
        before = await check(stub, FLORIDA_IP, geo_pb2.PURPOSE_DEPOSIT)
        assert before.region_code == "US-FL"
        # geoipupdate's way: a new file renamed over the old; Florida's range is now New Jersey.
        moved = {**CITY, "192.0.2.0/25": CITY["192.0.2.128/25"]}
        os.replace(write_city(tmp_path / "city.new", moved), city)
        regions: list[str] = []
        async with asyncio.timeout(30):
            while not regions or regions[-1] != "US-NJ":
                decision = await check(stub, FLORIDA_IP, geo_pb2.PURPOSE_DEPOSIT)
                regions.append(decision.region_code)
                await asyncio.sleep(0.02)
        # Every call answered, from the old file or the new one, never neither.
        assert set(regions) <= {"US-FL", "US-NJ"}
        assert decision.decision == geo_pb2.DECISION_ALLOW
    finally:
        await stop_service(running)
        service.close()


async def events_keyed(kafka_broker: Any, key: str, count: int) -> list[Any]:
    """The first ``count`` records on tavla.geo.v1 with ``key``."""
    return await keyed_records(
        kafka_broker.bootstrap, "tavla.geo.v1", key, lambda found: len(found) == count,
        timeout=30,
    )  # fmt: skip


def ce_type(record: Any) -> str:
    return str(dict(record.headers)["ce_type"].decode())


async def test_a_block_is_published_as_checked_and_blocked_with_its_evidence(
    stub: Any, kafka_broker: Any
) -> None:
    account = f"acct-{uuid.uuid4().hex[:8]}"
    decision = await check(stub, FLORIDA_IP, geo_pb2.PURPOSE_DEPOSIT, account_id=account)
    checked, blocked = await events_keyed(kafka_broker, account, 2)
    assert ce_type(checked) == "tavla.geo.v1.LocationChecked"
    assert ce_type(blocked) == "tavla.geo.v1.LocationBlocked"
    event = events_pb2.LocationChecked.FromString(checked.value)
    assert (event.check_id, event.account_id, event.ip_address) == (
        decision.check_id,
        account,
        FLORIDA_IP,
    )
    assert (event.decision, event.purpose) == (geo_pb2.DECISION_BLOCK, geo_pb2.PURPOSE_DEPOSIT)
    assert [r.code for r in event.reasons] == ["location_restricted"]
    assert (event.country_code, event.region_code, event.rules_version) == (
        "US",
        "US-FL",
        "tavla-2026-12",
    )
    assert event.evidence.declared_residence == "US-NJ"
    assert event.HasField("occurred_at")
    block = events_pb2.LocationBlocked.FromString(blocked.value)
    assert (block.check_id, block.region_code) == (decision.check_id, "US-FL")


async def test_an_allowed_check_before_registration_is_keyed_by_address(
    stub: Any, kafka_broker: Any
) -> None:
    # An address of its own in the Malta range, so no other test's event shares the key.
    ip = f"198.51.100.{uuid.uuid4().int % 100 + 20}"
    decision = await check(stub, ip, geo_pb2.PURPOSE_REGISTER, declared="MT")
    (record,) = await events_keyed(kafka_broker, ip, 1)
    event = events_pb2.LocationChecked.FromString(record.value)
    assert (event.check_id, event.decision, event.account_id) == (
        decision.check_id,
        geo_pb2.DECISION_ALLOW,
        "",
    )


async def test_a_stopped_service_leaves_no_connection_to_its_database(
    postgres_server: Any, kafka_broker: Any, tmp_path: Path
) -> None:
    """The decision log's own connection is closed with the rest once the calls drained."""
    geo = GeoSettings(write_city(tmp_path / "city.mmdb"), write_anonymous(tmp_path / "a.mmdb"))
    service = build_service(geo)
    name = new_database(postgres_server, "geo")
    running = await start_service(
        fast_settings("geo", postgres_server.url(name), kafka_broker.bootstrap),
        lambda runtime: wiring(runtime, service),
    )
    try:
        stub = geo_pb2_grpc.GeoServiceStub(running.channel)
        await check(stub, MALTA_IP, geo_pb2.PURPOSE_DEPOSIT, declared="MT")  # recorded
    finally:
        await stop_service(running)
        service.close()
    engine = make_engine(postgres_server.url("postgres"), pool_size=1)
    try:
        async with asyncio.timeout(10):
            while await _connections_to(engine, name):  # the server notices a close promptly
                await asyncio.sleep(0.05)
    finally:
        await engine.dispose()


async def _connections_to(engine: Any, database: str) -> int:
    async with engine.connect() as connection:
        count = await connection.scalar(
            text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name"),
            {"name": database},
        )
    return int(count or 0)
