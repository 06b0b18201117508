"""Checks on the API contracts in protos/ (as compiled into gen/tavla.pb by `make proto`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2

from tavla.common.v1 import auth_pb2

DESCRIPTOR_SET = Path(__file__).resolve().parents[2] / "gen" / "tavla.pb"

AREAS = {
    "common": None,
    "accounts": "AccountsService",
    "game": "GameService",
    "matchmaking": "MatchmakingService",
    "wallet": "WalletService",
    "analysis": "AnalysisService",
    "antiabuse": "AntiAbuseService",
    "geo": "GeoService",
    "tournaments": "TournamentsService",
}

# Standard addresses outside the versioned API (RFC 8615).
WELL_KNOWN = {"/.well-known/jwks.json"}

# Called only by other services: the gateway must never expose them.
INTERNAL = {
    "tavla.game.v1.GameService": {"CreateGame"},
    "tavla.wallet.v1.WalletService": {
        "PlaceHold",
        "PlaceHolds",
        "RaiseHold",
        "ReleaseHold",
        "CanCover",
        "ClaimHolds",
        "SettlePool",
        "FreezeAccount",
        "UnfreezeAccount",
    },
    "tavla.analysis.v1.AnalysisService": {
        "EvaluatePosition",
        "BestMoves",
        "AnalyseMatch",
        "SettlementShares",
    },
    "tavla.geo.v1.GeoService": {"CheckLocation"},
    "tavla.tournaments.v1.TournamentsService": {"CreateTournament"},
}

# Called by client apps: must be reachable through the gateway.
PUBLIC = {
    "tavla.accounts.v1.AccountsService": {
        "Register", "Login", "RefreshSession", "Logout", "GetAccount"
    },
    "tavla.game.v1.GameService": {
        "GetGame",
        "WatchGame",
        "Roll",
        "Move",
        "Double",
        "Take",
        "Drop",
        "Beaver",
        "Resign",
        "AcceptResign",
        "RejectResign",
        "Leave",
        "Reconnect",
        "GetMatchRecord",
        "ListLobbyRooms",
        "PostLobbyMessage",
        "ListLobbyMessages",
        "WatchLobbyChat",
    },
    "tavla.wallet.v1.WalletService": {
        "GetBalances",
        "Deposit",
        "Withdraw",
        "QuoteCommission",
        "SetDepositLimit",
    },
    "tavla.matchmaking.v1.MatchmakingService": {
        "ListTables",
        "GetTable",
        "CreateTable",
        "JoinTable",
        "LeaveTable",
        "CloseTable",
        "EnterQueue",
        "LeaveQueue",
        "GetRating",
        "GetLeaderboard",
    },
    "tavla.geo.v1.GeoService": {"ListJurisdictions"},
    "tavla.tournaments.v1.TournamentsService": {
        "ListTournaments",
        "GetTournament",
        "Register",
        "Unregister",
    },
    "tavla.antiabuse.v1.AntiAbuseService": {
        "GetRiskProfile",
        "ListAlerts",
        "ResolveAlert",
        "OpenCase",
        "GetCase",
        "AssignCase",
        "AddCaseNote",
        "ResolveCase",
        "ApproveSanctions",
        "RejectSanctions",
    },
}

# Staff methods: only a token carrying one of these roles opens them.
ROLES = {
    "tavla.antiabuse.v1.AntiAbuseService": {
        "GetRiskProfile": {"compliance"},
        "ListAlerts": {"compliance"},
        "GetAlert": {"compliance"},
        "ResolveAlert": {"compliance"},
        "OpenCase": {"compliance"},
        "GetCase": {"compliance"},
        "ListCases": {"compliance"},
        "AssignCase": {"compliance"},
        "AddCaseNote": {"compliance"},
        "ResolveCase": {"compliance"},
        "ApproveSanctions": {"compliance"},
        "RejectSanctions": {"compliance"},
    },
}

# Mutating game calls carry the version they expect.
VERSIONED = {
    "Roll",
    "Move",
    "Double",
    "Take",
    "Drop",
    "Beaver",
    "Resign",
    "AcceptResign",
    "RejectResign",
    "Leave",
}

# Calls that move or reserve money carry a client-supplied idempotency key.
IDEMPOTENT = {
    "tavla.wallet.v1.WalletService": {
        "Deposit",
        "Withdraw",
        "PlaceHold",
        "RaiseHold",
        "ReleaseHold",
        "FreezeAccount",
    },
    "tavla.matchmaking.v1.MatchmakingService": {"CreateTable", "JoinTable", "EnterQueue"},
    "tavla.game.v1.GameService": {"CreateGame"},
}

MONEY_WORDS = {
    "amount",
    "stake",
    "balance",
    "commission",
    "credit",
    "debit",
    "price",
    "fee",
    "money",
    "payout",
    "share",
    "rate",
    "cost",
    "limit",
    "sum",
    "units",
    "deposit",
    "withdrawal",
}

F = descriptor_pb2.FieldDescriptorProto


def _load() -> list[descriptor_pb2.FileDescriptorProto]:
    if not DESCRIPTOR_SET.exists():
        pytest.fail(f"{DESCRIPTOR_SET} is missing: run `make proto`")
    # annotations_pb2 is imported above, so the google.api.http option parses as an extension.
    fds = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes())
    return [f for f in fds.file if f.name.startswith("tavla/")]


FILES = _load()
SERVICES = {f"{f.package}.{s.name}": (f, s) for f in FILES for s in f.service}


def _http(method: descriptor_pb2.MethodDescriptorProto) -> http_pb2.HttpRule | None:
    if not method.options.HasExtension(annotations_pb2.http):
        return None
    rule: http_pb2.HttpRule = method.options.Extensions[annotations_pb2.http]
    return rule


def _paths(rule: http_pb2.HttpRule) -> list[str]:
    out = []
    for r in [rule, *rule.additional_bindings]:
        kind = r.WhichOneof("pattern")
        out.append(r.custom.path if kind == "custom" else getattr(r, kind or "get"))
    return out


def _messages() -> dict[str, descriptor_pb2.DescriptorProto]:
    found: dict[str, descriptor_pb2.DescriptorProto] = {}

    def walk(prefix: str, msgs: list[descriptor_pb2.DescriptorProto]) -> None:
        for m in msgs:
            found[f"{prefix}.{m.name}"] = m
            walk(f"{prefix}.{m.name}", list(m.nested_type))

    for f in FILES:
        walk(f".{f.package}", list(f.message_type))
    return found


MESSAGES = _messages()


def test_every_area_has_its_service_in_its_package() -> None:
    for f in FILES:
        area = f.name.split("/")[1]
        assert area in AREAS, f"{f.name}: unknown area"
        assert f.package == f"tavla.{area}.v1", f"{f.name}: package {f.package}"
        assert re.fullmatch(rf"tavla/{area}/v1/\w+\.proto", f.name), f.name
        assert f.syntax == "proto3", f.name
        for s in f.service:
            assert f.name == f"tavla/{area}/v1/{area}.proto", f"{s.name} lives in {f.name}"
            assert s.name == AREAS[area], f"{f.name}: service {s.name}"
            assert "google/api/annotations.proto" in f.dependency, f.name
    expected = {f"tavla.{a}.v1.{s}" for a, s in AREAS.items() if s}
    assert set(SERVICES) == expected


def test_http_paths_are_versioned_and_internal_methods_unexposed() -> None:
    for name, (_, service) in SERVICES.items():
        methods = {m.name: m for m in service.method}
        for m in service.method:
            rule = _http(m)
            if rule is None:
                continue
            for path in _paths(rule):
                assert path.startswith("/v1/") or path in WELL_KNOWN, f"{name}.{m.name}: {path}"
        for internal in INTERNAL.get(name, set()):
            assert internal in methods, f"{name}.{internal} is missing"
            assert _http(methods[internal]) is None, f"{name}.{internal} must not be exposed"
        for public in PUBLIC.get(name, set()):
            assert public in methods, f"{name}.{public} is missing"
            assert _http(methods[public]) is not None, f"{name}.{public} needs an http rule"


def _access(method: descriptor_pb2.MethodDescriptorProto) -> auth_pb2.MethodAccess:
    access: auth_pb2.MethodAccess = method.options.Extensions[auth_pb2.access]
    return access


def test_every_method_declares_who_may_call_it() -> None:
    for name, (_, service) in SERVICES.items():
        for m in service.method:
            access = _access(m)
            where = f"{name}.{m.name}"
            assert access.access != auth_pb2.ACCESS_UNSPECIFIED, f"{where}: no access option"
            if access.access == auth_pb2.ACCESS_SERVICE:
                assert access.callers, f"{where}: a service method names its callers"
                assert _http(m) is None, f"{where}: a service method is never exposed"
            else:
                assert not access.callers, f"{where}: callers apply to service methods only"
                assert _http(m) is not None, f"{where}: a player's method needs an http rule"
            if access.roles:
                assert access.access == auth_pb2.ACCESS_PLAYER, f"{where}: roles are for players"
            assert set(access.roles) == ROLES.get(name, {}).get(m.name, set()), (
                f"{where}: roles {sorted(access.roles)}"
            )


def _input(service: str, method: str) -> descriptor_pb2.DescriptorProto:
    _, s = SERVICES[service]
    m = next(m for m in s.method if m.name == method)
    return MESSAGES[m.input_type]


def test_concurrency_and_idempotency_fields() -> None:
    for method in VERSIONED:
        fields = {f.name: f for f in _input("tavla.game.v1.GameService", method).field}
        assert fields["expected_version"].type == F.TYPE_INT64, method
    for service, methods in IDEMPOTENT.items():
        for method in methods:
            fields = {f.name: f for f in _input(service, method).field}
            assert "idempotency_key" in fields, f"{service}.{method}"
            assert fields["idempotency_key"].type == F.TYPE_STRING, f"{service}.{method}"


def test_public_requests_do_not_name_the_actor() -> None:
    for name, (_, service) in SERVICES.items():
        for m in service.method:
            if _http(m) is None:
                continue
            for f in MESSAGES[m.input_type].field:
                assert not re.match(r"(acting|actor|caller|requester)", f.name), (
                    f"{name}.{m.name}: identity comes from metadata, not {f.name}"
                )


REQUIRED_EVENTS = {
    "tavla.accounts.v1": {"AccountRegistered"},
    "tavla.game.v1": {
        "GameStarted",
        "DiceRolled",
        "MovePlayed",
        "CubeOffered",
        "CubeTaken",
        "CubeDropped",
        "CubeBeavered",
        "ResignOffered",
        "ResignAccepted",
        "ResignRejected",
        "PlayerDisconnected",
        "PlayerReconnected",
        "ClockExpired",
        "GameEnded",
        "MatchEnded",
    },
    "tavla.wallet.v1": {
        "Deposited",
        "WithdrawalRequested",
        "WithdrawalCompleted",
        "WithdrawalFailed",
        "HoldPlaced",
        "HoldRaised",
        "HoldReleased",
        "Settled",
        "LimitChanged",
        "AccountFrozen",
    },
    "tavla.matchmaking.v1": {
        "TableOpened",
        "PlayerSeated",
        "PlayerLeftTable",
        "MatchMade",
        "TableClosed",
        "RatingChanged",
    },
    "tavla.analysis.v1": {"MatchAnalysed"},
    "tavla.antiabuse.v1": {"ComplianceAlert", "PairRestricted", "PairRestrictionLifted"},
    "tavla.geo.v1": {"LocationChecked", "LocationBlocked"},
}


def test_every_event_has_its_key_and_occurred_at() -> None:
    events: dict[str, set[str]] = {}
    for f in (f for f in FILES if f.name.endswith("/events.proto")):
        used = {fd.type_name for m in f.message_type for fd in m.field}
        for m in f.message_type:
            if f".{f.package}.{m.name}" in used:
                continue  # a part of other events, not an event itself
            events.setdefault(f.package, set()).add(m.name)
            fields = {fd.name: fd for fd in m.field}
            assert "occurred_at" in fields, f"{f.package}.{m.name}"
            assert fields["occurred_at"].type_name == ".google.protobuf.Timestamp", m.name
            assert any(
                n.endswith("_id") and fd.type == F.TYPE_STRING for n, fd in fields.items()
            ), f"{f.package}.{m.name} carries no aggregate id"
            assert not m.name.endswith(("Request", "Response")), m.name
    for package, required in REQUIRED_EVENTS.items():
        assert required <= events.get(package, set()), required - events.get(package, set())


def test_no_money_in_floating_point() -> None:
    for full, m in MESSAGES.items():
        for f in m.field:
            if f.type not in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
                continue
            words = set(f.name.split("_"))
            assert not words & MONEY_WORDS, f"{full}.{f.name} is floating point money"


def test_enums_are_prefixed_and_start_unspecified() -> None:
    def check(prefix: str, enums: list[descriptor_pb2.EnumDescriptorProto]) -> None:
        for e in enums:
            stem = re.sub(r"(?<!^)(?=[A-Z])", "_", e.name).upper()
            assert e.value[0].number == 0, e.name
            assert e.value[0].name == f"{stem}_UNSPECIFIED", f"{prefix}.{e.name}"
            for v in e.value:
                assert v.name.startswith(f"{stem}_"), f"{prefix}.{e.name}.{v.name}"

    for f in FILES:
        check(f.package, list(f.enum_type))
        for m in f.message_type:
            check(f"{f.package}.{m.name}", list(m.enum_type))


def test_generated_modules_import_and_name_event_types() -> None:
    from tavla.accounts.v1 import accounts_pb2, accounts_pb2_grpc, events_pb2
    from tavla.common.v1 import money_pb2
    from tavla.game.v1 import events_pb2 as game_events

    assert events_pb2.AccountRegistered.DESCRIPTOR.full_name == (
        "tavla.accounts.v1.AccountRegistered"
    )
    assert game_events.MatchEnded.DESCRIPTOR.full_name == "tavla.game.v1.MatchEnded"
    assert hasattr(accounts_pb2_grpc, "AccountsServiceStub")
    stake = money_pb2.Money(minor_units=500, currency="USD")
    assert money_pb2.Money.FromString(stake.SerializeToString()) == stake
    assert accounts_pb2.ACCOUNT_STATUS_ACTIVE != accounts_pb2.ACCOUNT_STATUS_UNSPECIFIED
