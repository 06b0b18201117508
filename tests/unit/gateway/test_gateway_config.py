"""The gateway config generator (services/kit/gateway), without running Envoy."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from services.kit.gateway.config import render
from services.kit.gateway.methods import Exposure, RestBinding, api_methods
from services.kit.gateway.settings import (
    GatewaySettings,
    RateLimit,
    SettingsError,
    Upstream,
)

DESCRIPTOR = Path(__file__).resolve().parents[3] / "gen" / "tavla.pb"
ACCOUNTS = "/tavla.accounts.v1.AccountsService"
MINIMAL = {"upstreams": {"accounts": {"host": "127.0.0.1", "port": 50051}},
           "jwks_file": "/j.json", "descriptor_file": "/d.pb"}


def exposure() -> dict[str, Exposure]:
    return {m.grpc_path: m.exposure for m in api_methods(DESCRIPTOR)}


def test_exposure_comes_from_the_access_option() -> None:
    found = exposure()
    for name in ("Register", "Login", "RefreshSession", "Logout", "GetJwks"):
        assert found[f"{ACCOUNTS}/{name}"] is Exposure.ANONYMOUS, name
    assert found[f"{ACCOUNTS}/GetAccount"] is Exposure.PLAYER
    assert found["/tavla.wallet.v1.WalletService/PlaceHold"] is Exposure.HIDDEN
    assert found["/tavla.game.v1.GameService/CreateGame"] is Exposure.HIDDEN


def test_templated_rest_paths_become_one_segment_regexes() -> None:
    binding = RestBinding("POST", "/v1/accounts/{account_id}:selfExclude")
    pattern = re.compile(binding.path_regex())
    assert pattern.fullmatch("/v1/accounts/a-1:selfExclude")
    assert not pattern.fullmatch("/v1/accounts/a/b:selfExclude")
    assert re.compile(RestBinding("GET", "/v1/{name=**}").path_regex()).fullmatch("/v1/a/b")


def rendered(**raw: Any) -> dict[str, Any]:
    settings = GatewaySettings.from_mapping({**MINIMAL, **raw})
    return render(settings, api_methods(DESCRIPTOR))


def routes(config: dict[str, Any]) -> list[dict[str, Any]]:
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    found: list[dict[str, Any]] = (
        manager["typed_config"]["route_config"]["virtual_hosts"][0]["routes"])
    return found


def test_only_login_registration_and_refresh_are_rate_limited_per_address() -> None:
    limited = {r["match"]["path"]: r for r in routes(rendered())
               if "typed_per_filter_config" in r}
    assert set(limited) == {f"{ACCOUNTS}/{m}" for m in ("Login", "Register", "RefreshSession")}
    login = limited[f"{ACCOUNTS}/Login"]
    assert login["route"]["rate_limits"] == [{"actions": [{"remote_address": {}}]}]
    policy = login["typed_per_filter_config"]["envoy.filters.http.local_ratelimit"]
    (descriptor,) = policy["descriptors"]
    assert descriptor["entries"] == [{"key": "remote_address"}]
    assert descriptor["token_bucket"] == {"max_tokens": 10, "tokens_per_fill": 10,
                                          "fill_interval": "60s"}


def test_only_services_with_an_upstream_are_routed() -> None:
    paths = {r["match"].get("path") for r in routes(rendered())}
    assert f"{ACCOUNTS}/Login" in paths
    assert not any(p and "GameService" in p for p in paths)


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"listen_prot": 1}, "listen_prot"),
        ({"rate_limits": {"logins": {"requests": 1}}}, "logins"),
        ({"rate_limits": {"login": {"requests": 0}}}, "rate_limits.login"),
        ({"jwt_audiences": []}, "jwt_audiences"),
        ({"listen_port": "8080"}, "listen_port"),
        ({"health": {"interval_seconds": "5 seconds"}}, "health.interval_seconds"),
        ({"upstreams": {"game": {"host": "g"}}}, "port"),
        ({"upstream_tls": {"cert_file": "/c.pem", "key_file": "/k.pem"}}, "ca_file"),
        ({"upstream_tls": {"cert_file": "", "key_file": "/k.pem", "ca_file": "/ca.pem"}},
         "upstream_tls"),
    ],
)
def test_bad_settings_are_refused_naming_the_field(raw: dict[str, Any], named: str) -> None:
    with pytest.raises(SettingsError, match=re.escape(named)):
        GatewaySettings.from_mapping({**MINIMAL, **raw})


def test_durations_from_helm_values_become_seconds() -> None:
    settings = GatewaySettings.from_mapping(
        {**MINIMAL, "route_timeout_seconds": "1m",
         "health": {"interval_seconds": "500ms", "timeout_seconds": 2}})
    assert settings.route_timeout_seconds == 60.0
    assert (settings.health.interval_seconds, settings.health.timeout_seconds) == (0.5, 2.0)
    assert settings.upstreams["accounts"] == Upstream("127.0.0.1", 50051)
    assert settings.rate_limits["register"] == RateLimit(5, 60)


def clusters(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in config["static_resources"]["clusters"]}


def test_with_upstream_tls_every_service_cluster_presents_the_gateways_certificate() -> None:
    tls = {"cert_file": "/tls/gateway.pem", "key_file": "/tls/gateway.key.pem",
           "ca_file": "/tls/ca.pem"}
    found = clusters(rendered(
        upstreams={"accounts": {"host": "127.0.0.1", "port": 51051},
                   "game": {"host": "127.0.0.1", "port": 51052}},
        webhooks={"host": "127.0.0.1", "port": 8081}, upstream_tls=tls))
    for area in ("accounts", "game"):
        socket = found[area]["transport_socket"]
        assert socket["name"] == "envoy.transport_sockets.tls"
        context = socket["typed_config"]["common_tls_context"]
        assert socket["typed_config"]["@type"].endswith("UpstreamTlsContext")
        assert context["alpn_protocols"] == ["h2"]  # gRPC servers negotiate h2 by ALPN
        assert context["tls_certificates"] == [
            {"certificate_chain": {"filename": "/tls/gateway.pem"},
             "private_key": {"filename": "/tls/gateway.key.pem"}}]
        assert context["validation_context"] == {"trusted_ca": {"filename": "/tls/ca.pem"}}
    # The payment provider's webhooks are plain HTTP to the wallet's own listener.
    assert not [name for name, c in found.items()
                if "transport_socket" in c and name not in ("accounts", "game")]


def test_without_upstream_tls_the_clusters_are_plaintext() -> None:
    assert not [c for c in clusters(rendered()).values() if "transport_socket" in c]
