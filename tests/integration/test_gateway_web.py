"""The real Envoy gateway (the dev config) serves the web client's files: each with its
content type, without a token, `/` as index.html, bytes unchanged; an unknown file is a
404 in the one error shape, and the API behind it still wants its token."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from services.kit.devstack.envoy import WEB_ROOT
from services.kit.devstack.supervisor import Supervisor
from tests.integration.test_gateway_errors import error_of
from tests.support.gateway import RunningGateway, gateway_before_stand_in

NOT_FOUND, UNAUTHENTICATED = 5, 16
# A PNG header and bytes that are not UTF-8: they must arrive exactly as on disk.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00"


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
def web(tmp_path: Path) -> Path:
    """The checkout's web client plus one binary file."""
    root = tmp_path / "web"
    shutil.copytree(WEB_ROOT, root)
    (root / "img").mkdir(exist_ok=True)
    (root / "img" / "test-pixel.png").write_bytes(PNG)
    return root


@pytest.fixture
async def gateway(tmp_path: Path, supervisor: Supervisor,
                  web: Path) -> AsyncIterator[RunningGateway]:
    async with gateway_before_stand_in(tmp_path, supervisor, web_root=web) as running:
        yield running


async def test_web_files_are_served_with_their_types_and_no_token(
    gateway: RunningGateway, web: Path
) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        root = await client.get("/")
        index = await client.get("/index.html")
        api = await client.get("/js/api.js")
        icon = await client.get("/img/favicon.svg")
        png = await client.get("/img/test-pixel.png")
    assert root.status_code == index.status_code == 200, root.text
    assert root.headers["content-type"] == "text/html; charset=utf-8"
    assert root.content == index.content == (web / "index.html").read_bytes()
    assert api.status_code == 200, api.text
    assert api.headers["content-type"] == "text/javascript; charset=utf-8"
    assert api.content == (web / "js" / "api.js").read_bytes()
    assert icon.headers["content-type"] == "image/svg+xml"
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert png.content == PNG
    for reply in (root, api, png):
        assert reply.headers["cache-control"] == "no-cache"
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert "connect-src 'self'" in reply.headers["content-security-policy"]


async def test_an_unknown_file_is_a_404_in_the_one_error_shape(gateway: RunningGateway) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
        unknown = await client.get("/js/no-such-module.js")
        posted = await client.post("/js/api.js", json={})
        api = await client.get("/v1/accounts/p1")
    assert unknown.status_code == 404, unknown.text
    assert error_of(unknown)["code"] == NOT_FOUND
    # Only GETs of the web's own paths go without a token; the API is as before.
    assert posted.status_code == 401 and error_of(posted)["code"] == UNAUTHENTICATED
    assert api.status_code == 401 and error_of(api)["code"] == UNAUTHENTICATED
