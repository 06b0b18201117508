"""The web client's files in the gateway config (services/kit/gateway/static.py), without
Envoy: what load_web reads, and the routes and token rules render makes of it."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.kit.gateway.config import render
from services.kit.gateway.methods import api_methods
from services.kit.gateway.settings import GatewaySettings
from services.kit.gateway.static import StaticError, load_web

REPO = Path(__file__).resolve().parents[3]
DESCRIPTOR = REPO / "gen" / "tavla.pb"
SETTINGS = GatewaySettings.from_mapping({
    "upstreams": {"accounts": {"host": "127.0.0.1", "port": 50051}},
    "jwks_file": "/j.json", "descriptor_file": "/d.pb"})
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


def web_dir(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    (root / "js").mkdir(parents=True)
    (root / "img").mkdir()
    (root / "index.html").write_text("<!doctype html><title>t</title>")
    (root / "js" / "api.js").write_text("export const x = 'é';\n")
    (root / "img" / "logo.png").write_bytes(PNG)
    (root / ".hidden").write_text("never served")
    return root


def rendered(root: Path) -> dict[str, Any]:
    return render(SETTINGS, api_methods(DESCRIPTOR), web=load_web(root))


def route_config(config: dict[str, Any]) -> dict[str, Any]:
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    found: dict[str, Any] = manager["typed_config"]["route_config"]
    return found


def static_routes(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["match"]["path"]: r for r in route_config(config)["virtual_hosts"][0]["routes"]
            if "direct_response" in r and r["match"].get("path") not in (None, "/openapi.json")
            and r["direct_response"]["status"] == 200}


def headers(route: dict[str, Any]) -> dict[str, str]:
    return {h["header"]["key"]: h["header"]["value"] for h in route["response_headers_to_add"]}


def test_every_file_is_a_get_route_with_its_type_and_slash_is_the_index(tmp_path: Path) -> None:
    found = static_routes(rendered(web_dir(tmp_path)))
    assert set(found) == {"/", "/index.html", "/js/api.js", "/img/logo.png"}
    assert headers(found["/"])["content-type"] == "text/html; charset=utf-8"
    assert found["/"]["direct_response"]["body"] == {
        "inline_string": "<!doctype html><title>t</title>"}
    assert headers(found["/js/api.js"])["content-type"] == "text/javascript; charset=utf-8"
    assert found["/js/api.js"]["direct_response"]["body"]["inline_string"] == (
        "export const x = 'é';\n")
    # Binary files travel as bytes (base64 in the JSON bootstrap), unchanged.
    png = found["/img/logo.png"]
    assert headers(png)["content-type"] == "image/png"
    assert base64.b64decode(png["direct_response"]["body"]["inline_bytes"]) == PNG
    for route in found.values():
        assert route["match"]["headers"] == [{"name": ":method",
                                              "string_match": {"exact": "GET"}}]
        assert headers(route)["cache-control"] == "no-cache"
        assert "default-src 'self'" in headers(route)["content-security-policy"]
        assert headers(route)["x-content-type-options"] == "nosniff"


def test_the_largest_file_fits_the_direct_response_limit(tmp_path: Path) -> None:
    root = web_dir(tmp_path)
    (root / "js" / "big.js").write_text("// " + "x" * 200_000 + "\n")
    limit = route_config(rendered(root))["max_direct_response_body_size_bytes"]
    assert limit >= 200_004


def test_web_gets_need_no_token_but_other_verbs_and_paths_do(tmp_path: Path) -> None:
    config = rendered(web_dir(tmp_path))
    manager = config["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    (jwt,) = [f for f in manager["typed_config"]["http_filters"]
              if f["name"] == "envoy.filters.http.jwt_authn"]
    get = [{"name": ":method", "string_match": {"exact": "GET"}}]
    rules = jwt["typed_config"]["rules"]
    anonymous = [r["match"] for r in rules if "requires" not in r]
    assert {"path": "/", "headers": get} in anonymous
    assert {"path": "/index.html", "headers": get} in anonymous
    # A whole top-level directory: an unknown file there is a 404, not a 401.
    assert {"prefix": "/js/", "headers": get} in anonymous
    assert {"prefix": "/img/", "headers": get} in anonymous
    assert not any(m.get("prefix") == "/" for m in anonymous)
    assert rules[-1] == {"match": {"prefix": "/"}, "requires": {"provider_name": "tavla"}}


def test_unknown_file_types_and_api_paths_are_refused(tmp_path: Path) -> None:
    root = web_dir(tmp_path)
    (root / "notes.exe").write_bytes(b"MZ")
    with pytest.raises(StaticError, match=r"notes\.exe: no content type for \.exe"):
        load_web(root)
    (root / "notes.exe").unlink()
    (root / "v1").mkdir()
    (root / "v1" / "accounts.json").write_text("{}")
    with pytest.raises(StaticError, match=r"web files may not live under \['v1'\]"):
        rendered(root)
    with pytest.raises(StaticError, match="does not exist"):
        load_web(tmp_path / "nowhere")


def test_the_repositorys_web_client_loads() -> None:
    paths = {f.path for f in load_web(REPO / "web")}
    assert {"/", "/index.html", "/js/api.js"} <= paths


def test_the_cli_serves_a_web_directory(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"upstreams": {"accounts": {"host": "127.0.0.1", "port": 50051}},'
                        ' "jwks_file": "/j.json", "descriptor_file": "/d.pb"}')
    out = tmp_path / "envoy.json"
    result = subprocess.run(
        [sys.executable, "-m", "services.cli", "gateway", "config", "--settings", str(settings),
         "--descriptor", str(DESCRIPTOR), "--web", str(web_dir(tmp_path)), "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert '"/js/api.js"' in out.read_text()
    missing = subprocess.run(
        [sys.executable, "-m", "services.cli", "gateway", "config", "--settings", str(settings),
         "--descriptor", str(DESCRIPTOR), "--web", str(tmp_path / "nowhere")],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
