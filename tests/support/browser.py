"""Debian's Chromium driven by Playwright, for the browser tests of the web client and the
compliance console.

Playwright's own browser downloads are never used: `.ci/run` installs Debian's
`chromium`, and a missing one fails the test (it never skips). Without the
background-networking flags Chromium reaches for Google's services, which a closed
network refuses (and the tests must make no request outside the gateway).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route, sync_playwright

from services.kit.gateway.static import load_web

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
WEB = Path(__file__).resolve().parents[2] / "web"
FAKE_ORIGIN = "http://web.test"


@contextmanager
def chromium() -> Iterator[Browser]:
    """A headless Chromium, closed afterwards."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def web_modules_page() -> Iterator[Page]:
    """A blank page of a fake origin that serves web/'s files as the gateway would (their
    content types from the gateway's own loader), to test the client's modules in
    seconds without a stack."""
    files = {f.path: f for f in load_web(WEB)}

    def serve(route: Route) -> None:
        path = route.request.url.removeprefix(FAKE_ORIGIN).split("?")[0]
        if path == "/blank.html":
            route.fulfill(status=200, content_type="text/html",
                          body="<!doctype html><title>t</title>")
        elif path in files:
            route.fulfill(status=200, content_type=files[path].content_type, body=files[path].body)
        else:
            route.fulfill(status=404, body="")

    with chromium() as browser:
        opened = browser.new_page()
        opened.route(f"{FAKE_ORIGIN}/**", serve)
        opened.goto(f"{FAKE_ORIGIN}/blank.html")
        yield opened
