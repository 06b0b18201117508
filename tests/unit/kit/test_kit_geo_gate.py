"""The geo gate: blocks stop the action, an unreachable geo service stops only real money."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from services.kit.client_signals import (
    CLIENT_ADDRESS_HEADER,
    DEVICE_ID_HEADER,
    ClientSignals,
    signals_from_metadata,
)
from services.kit.errors import FailedPrecondition, Unavailable
from services.kit.geo_gate import GeoGate
from tavla.geo.v1 import geo_pb2

HERE = ClientSignals(address="198.51.100.7", device_id="phone-1")


class _Answers:
    """Stands in for the geo service's stub: answers with a fixed decision or fails."""

    def __init__(self, decision: geo_pb2.LocationDecision | None = None,
                 failure: grpc.StatusCode | None = None) -> None:
        self.decision = decision
        self.failure = failure
        self.requests: list[geo_pb2.CheckLocationRequest] = []

    async def CheckLocation(
        self, request: geo_pb2.CheckLocationRequest, timeout: float
    ) -> geo_pb2.LocationDecision:
        self.requests.append(request)
        if self.failure is not None:
            raise grpc.aio.AioRpcError(
                self.failure, grpc.aio.Metadata(), grpc.aio.Metadata(), "down"
            )
        assert self.decision is not None
        return self.decision


def _gate(stub: Any) -> GeoGate:
    return GeoGate(stub)


BLOCKED = geo_pb2.LocationDecision(
    decision=geo_pb2.DECISION_BLOCK,
    reasons=[geo_pb2.Reason(code="location_restricted", message="Florida restricts real money")],
)


async def test_an_allowed_check_asks_with_the_players_address_residence_and_purpose() -> None:
    stub = _Answers(geo_pb2.LocationDecision(decision=geo_pb2.DECISION_ALLOW))
    decision = await _gate(stub).require(
        geo_pb2.PURPOSE_DEPOSIT, account_id="a1", residence="MT", signals=HERE
    )
    assert decision is not None and decision.decision == geo_pb2.DECISION_ALLOW
    (request,) = stub.requests
    assert (request.ip_address, request.declared_residence, request.account_id) == (
        "198.51.100.7", "MT", "a1"
    )
    assert request.purpose == geo_pb2.PURPOSE_DEPOSIT


async def test_a_block_is_failed_precondition_naming_each_reason_and_its_code() -> None:
    with pytest.raises(FailedPrecondition) as refused:
        await _gate(_Answers(BLOCKED)).require(
            geo_pb2.PURPOSE_PLAY_MONEY, account_id="a1", residence="US-FL", signals=HERE
        )
    assert "Florida restricts real money [location_restricted]" in refused.value.message


@pytest.mark.parametrize(
    "purpose",
    [geo_pb2.PURPOSE_DEPOSIT, geo_pb2.PURPOSE_WITHDRAW, geo_pb2.PURPOSE_PLAY_REAL_MONEY],
)
async def test_real_money_fails_closed_when_geo_is_down_or_not_configured(purpose: Any) -> None:
    for gate in (_gate(_Answers(failure=grpc.StatusCode.UNAVAILABLE)), GeoGate(None)):
        with pytest.raises(Unavailable):
            await gate.require(purpose, account_id="a1", residence="MT", signals=HERE)


@pytest.mark.parametrize(
    "purpose", [geo_pb2.PURPOSE_REGISTER, geo_pb2.PURPOSE_LOGIN, geo_pb2.PURPOSE_PLAY_MONEY]
)
async def test_other_purposes_go_on_without_a_decision_when_geo_is_down(purpose: Any) -> None:
    down = _gate(_Answers(failure=grpc.StatusCode.DEADLINE_EXCEEDED))
    assert await down.require(purpose, account_id="a1", residence="MT", signals=HERE) is None


async def test_real_money_without_a_client_address_is_refused_without_asking() -> None:
    stub = _Answers(geo_pb2.LocationDecision(decision=geo_pb2.DECISION_ALLOW))
    with pytest.raises(FailedPrecondition, match="location_unknown"):
        await _gate(stub).require(
            geo_pb2.PURPOSE_DEPOSIT, account_id="a1", residence="MT", signals=ClientSignals()
        )
    assert stub.requests == []


@pytest.mark.parametrize(
    "purpose", [geo_pb2.PURPOSE_REGISTER, geo_pb2.PURPOSE_LOGIN, geo_pb2.PURPOSE_PLAY_MONEY]
)
async def test_without_a_client_address_the_declared_residence_is_still_checked(
    purpose: Any,
) -> None:
    """No address (a direct caller): geo is asked about the residence alone, and its block
    stops the action as from anywhere."""
    residence_block = geo_pb2.LocationDecision(
        decision=geo_pb2.DECISION_BLOCK,
        reasons=[geo_pb2.Reason(code="residence_restricted", message="Iran is sanctioned")],
    )
    stub = _Answers(residence_block)
    with pytest.raises(FailedPrecondition, match=r"\[residence_restricted\]"):
        await _gate(stub).require(purpose, account_id="a1", residence="IR",
                                  signals=ClientSignals())
    (request,) = stub.requests
    assert (request.ip_address, request.declared_residence, request.purpose) == ("", "IR", purpose)


def test_signals_take_a_valid_address_in_canonical_form_and_a_printable_device_id() -> None:
    signals = signals_from_metadata(
        [(CLIENT_ADDRESS_HEADER, " 2001:DB8:0::1 "), (DEVICE_ID_HEADER, "ios-7f3a")]
    )
    assert signals == ClientSignals(address="2001:db8::1", device_id="ios-7f3a")


def test_signals_drop_what_is_not_an_address_or_is_not_a_sane_device_id() -> None:
    signals = signals_from_metadata(
        [(CLIENT_ADDRESS_HEADER, "192.0.2.1, 10.0.0.1"), (DEVICE_ID_HEADER, "x" * 129)]
    )
    assert signals == ClientSignals()
