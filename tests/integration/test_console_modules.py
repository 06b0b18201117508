"""The compliance console's pure modules in Debian's Chromium, without a stack (the files of
web/ through tests/support/browser.py's fake origin):

- dom.js puts whatever the platform sends (alert evidence holds chat excerpts players
  wrote) into the page as text and attribute values, never as HTML;
- client.js reads the signed-in account and its roles from the access token api.js
  holds, base64url without padding included, and calls only an account whose roles
  hold "compliance" an officer;
- an account is shown by its id with its screen name beside it (names.js's batched
  lookup), as text: in an alert's accounts, and in a case's sanctions and resolve form.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page

from tests.support.browser import web_modules_page


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    with web_modules_page() as opened:
        yield opened


HOSTILE = '<img src=x onerror="window.pwned=1">"><script>window.pwned=2</script>'


def test_platform_text_never_becomes_html(page: Page) -> None:
    found = page.evaluate("""async (hostile) => {
        const { h, details } = await import('/console/js/dom.js');
        const node = h('div', { title: hostile, 'data-x': hostile }, hostile,
                       details([[hostile, hostile]]));
        document.body.append(node);
        await new Promise((done) => setTimeout(done, 50));
        return { text: node.firstChild.textContent, title: node.getAttribute('title'),
                 elements: node.querySelectorAll('img, script').length,
                 pwned: window.pwned || 0 };
    }""", HOSTILE)
    assert found == {"text": HOSTILE, "title": HOSTILE, "elements": 0, "pwned": 0}


def token(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'ES256', 'typ': 'JWT'})}.{part(claims)}.c2ln"


def test_the_role_is_read_from_the_access_token(page: Page) -> None:
    # "é?>" and the name's length make the payload's base64url use "-" or "_" and need
    # padding: atob alone would refuse it.
    officer = token({"sub": "acc-1", "roles": ["compliance"], "name": "Zoé?>?>", "x": "ab"})
    payload = officer.split(".")[1]
    assert ("-" in payload or "_" in payload) and len(payload) % 4
    player = token({"sub": "acc-2", "residence": "MT"})
    other = token({"sub": "acc-3", "roles": ["support"]})
    seen = page.evaluate("""async (tokens) => {
        const { api } = await import('/js/api.js');
        const client = await import('/console/js/client.js');
        const found = [];
        for (const value of tokens) {
            api.accessToken = value;
            const who = await client.officer();
            found.push([who.accountId, who.roles, client.isOfficer(who)]);
        }
        api.accessToken = null;
        return found;
    }""", [officer, player, other])
    assert seen == [
        ["acc-1", ["compliance"], True],
        ["acc-2", [], False],
        ["acc-3", ["support"], False],
    ]


def test_an_account_is_shown_with_its_screen_name_beside_its_id(page: Page) -> None:
    seen = page.evaluate("""async (hostile) => {
        const { api } = await import('/js/api.js');
        const { accountLink } = await import('/console/js/views/alert.js');
        const named = "dddddddd-0000-4000-8000-000000000001";
        const unnamed = "eeeeeeee-0000-4000-8000-000000000002";
        api.accessToken = "token";
        api.expiresAt = Date.now() + 3_600_000;
        const asked = [];
        api.fetch = async (url) => {
            asked.push(url);
            const names = [{ accountId: named, screenName: hostile }];
            return new Response(JSON.stringify({ names }));
        };
        const links = [accountLink(named), accountLink(unnamed)];
        document.body.append(...links);
        await new Promise((done) => setTimeout(done, 100));
        return { shown: links.map((l) => [l.querySelector('a').textContent,
                                          l.querySelector('.screen-name').textContent]),
                 calls: asked.length, elements: document.querySelectorAll('img, script').length,
                 pwned: window.pwned || 0 };
    }""", HOSTILE)
    assert seen["shown"] == [["dddddddd-0000-4000-8000-000000000001", HOSTILE],
                             ["eeeeeeee-0000-4000-8000-000000000002", "(no screen name)"]]
    assert seen["calls"] == 1  # both in one lookup
    assert (seen["elements"], seen["pwned"]) == (0, 0)


def test_a_cases_sanctions_and_resolve_form_name_each_account_beside_its_id(
    page: Page,
) -> None:
    seen = page.evaluate("""async (hostile) => {
        const { api } = await import('/js/api.js');
        const { render } = await import('/console/js/views/case.js');
        const ann = "aaaaaaaa-5555-4000-8000-000000000001";
        const bob = "bbbbbbbb-5555-4000-8000-000000000002";
        const officer = "ffffffff-5555-4000-8000-000000000009";
        api.accessToken = "token";
        api.expiresAt = Date.now() + 3_600_000;
        const found = { caseId: "c-1", status: "CASE_STATUS_OPEN", openedBy: officer,
            subjectAccountIds: [ann, bob], alertIds: [], log: [],
            sanctions: [{ kind: "SANCTION_KIND_FREEZE_WALLET", accountId: bob }] };
        api.fetch = async (url) => {
            const [path, query] = url.split("?");
            if (path === "/v1/screen-names") {
                const known = { [ann]: "Ann_5", [bob]: hostile };
                const ids = new URLSearchParams(query).getAll("accountIds");
                return new Response(JSON.stringify({ names: ids.filter((id) => known[id])
                    .map((id) => ({ accountId: id, screenName: known[id] })) }));
            }
            return new Response(JSON.stringify(path === "/v1/compliance/cases/c-1" ? found : {}));
        };
        const main = document.createElement("main");
        document.body.append(main);
        await render(main, ["c-1"], { me: officer, refresh: async () => {} });
        await new Promise((done) => setTimeout(done, 100));
        const text = (selector) => [...main.querySelectorAll(selector)]
            .map((e) => e.textContent.replace(/\\s+/g, " ").trim());
        return { sanctions: text(".sanction-list li"),
                 legends: text("fieldset.subject legend").slice(0, 2),
                 elements: main.querySelectorAll("img, script").length,
                 pwned: window.pwned || 0 };
    }""", HOSTILE)
    bob = "bbbbbbbb-5555-4000-8000-000000000002"
    assert seen["sanctions"] == [f"Freeze wallet: {bob} ({HOSTILE})"]
    assert seen["legends"] == [
        "Account aaaaaaaa-5555-4000-8000-000000000001 (Ann_5)", f"Account {bob} ({HOSTILE})"
    ]
    assert (seen["elements"], seen["pwned"]) == (0, 0)
