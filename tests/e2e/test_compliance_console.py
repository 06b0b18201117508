"""The compliance console in a real browser (Debian's Chromium driven by Playwright),
on the real stack (`tavla dev`), through the gateway only.

Two accounts log in from one device; the real multi-accounting detector raises an
alert. An officer, made one by the operator's `tavla accounts grant-role`, signs in
to the console on a phone-sized screen, finds the alert with the filters, reads its
evidence and the account's risk profile, opens a case, assigns it, notes it and
resolves it as sanctioned (terminate one account, freeze the other's wallet): the freeze
at once, the termination a proposal a second officer, signed in on another page,
approves (the proposer is offered no approval). The case's log shows who did what; the
sanctions take effect (checked through the API: the terminated player cannot sign in,
the other's wallet is frozen). A player
without the role is refused. Screenshots go to artifacts/screenshots/.

No page may make a request anywhere but the gateway, get an error answer (a missing
module, a refused call), scroll sideways on the phone screen, or leave a form field
without a label. A missing Chromium fails the test.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from services.geo.devdata import malta_address
from services.kit.devstack.postgres import SUPERUSER
from tests.e2e.devstack import DevRun
from tests.e2e.test_sanctions_done import PASSWORD, login, poll, register
from tests.support.browser import chromium
from tests.support.compliance import grant_role

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "artifacts" / "screenshots"
PHONE = {"width": 390, "height": 844}
# The machine is shared and slow: a view may take seconds to answer.
WAIT_MS = 30_000


@pytest.fixture
def console_stack(dev_stack: DevRun) -> DevRun:
    """The stack this file uses: the session's shared `tavla dev` (tests/e2e/conftest.py)."""
    return dev_stack


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


def officer_account(run: DevRun) -> tuple[str, str]:
    """A new account made a compliance officer by the operator's command: (email, id)."""
    email = f"officer-{uuid.uuid4().hex[:8]}@example.com"
    created = register(run, email)
    assert created.status_code == 200, created.text
    accounts_db = (f"postgresql+asyncpg://{SUPERUSER}@127.0.0.1:"
                   f"{run.postgres_port}/tavla_accounts")
    # Playwright's sync API runs an event loop on this thread: the command's own, elsewhere.
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, grant_role(accounts_db, email)).result()
    return email, created.json()["accountId"]


def bearer(run: DevRun, email: str) -> dict[str, str]:
    signed = login(run, email)
    assert signed.status_code == 200, signed.text
    return {"authorization": f"Bearer {signed.json()['accessToken']}"}


def console_page(browser: Browser, run: DevRun, troubles: list[str]) -> Page:
    """A fresh phone-sized page of the console. A request anywhere but the gateway, and
    any answer of 400 or more (a missing module, a refused call), land in ``troubles``."""
    # From an address of its own: the gateway allows 10 logins a minute per address, and
    # the shared stack's other tests sign in from its loopback address (tests/e2e/conftest.py).
    address = malta_address(uuid.uuid4().int % 0xFFFF + 1)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True,
                                  extra_http_headers={"x-forwarded-for": address})
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    page.on("request", lambda request: troubles.append(f"outside: {request.url}")
            if not request.url.startswith(run.gateway + "/") else None)
    page.on("response", lambda response: troubles.append(f"{response.status} {response.url}")
            if response.status >= 400 else None)
    page.goto(f"{run.gateway}/console/index.html")
    return page


def sign_in(page: Page, email: str) -> None:
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"console-{name}.png"), full_page=True)


def check_the_page(page: Page) -> None:
    """Every form field has a label, and nothing is wider than the phone's screen."""
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, select, textarea')]
        .filter((e) => e.type !== 'hidden' && e.labels.length === 0
                       && !e.getAttribute('aria-label'))
        .map((e) => e.outerHTML)""")
    assert unlabelled == []
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page scrolls sideways: {widths}"


def focused_heading(page: Page) -> str:
    """The text of the focused element if it is the view's heading (keyboard users land
    on it after every navigation), else ''."""
    text: str = page.evaluate(
        "() => document.activeElement.tagName === 'H1' ? document.activeElement.textContent : ''")
    return text


def test_an_officer_sanctions_a_ring_from_its_alert_in_the_console(
    console_stack: DevRun, browser: Browser
) -> None:
    run = console_stack
    officer_email, officer_id = officer_account(run)
    tag = uuid.uuid4().hex[:8]
    device = f"phone-{tag}"
    ann_email, bob_email = f"ann-{tag}@example.com", f"bob-{tag}@example.com"
    ann_account, bob_account = register(run, ann_email).json(), register(run, bob_email).json()
    ann, bob = ann_account["accountId"], bob_account["accountId"]
    ann_name, bob_name = ann_account["screenName"], bob_account["screenName"]
    for email in (ann_email, bob_email):
        assert login(run, email, device).status_code == 200  # one device: one person?
    officer = bearer(run, officer_email)

    with httpx.Client(base_url=run.gateway, timeout=30, headers=officer) as api:
        def alert_raised() -> Any:
            listed = api.get("/v1/compliance/alerts", params={"accountId": ann})
            assert listed.status_code == 200, listed.text
            return listed.json().get("alerts")

        alert = poll(alert_raised, "the multi-accounting alert")[0]
    assert sorted(alert["subjectAccountIds"]) == sorted([ann, bob])

    troubles: list[str] = []
    page = console_page(browser, run, troubles)
    sign_in(page, officer_email)
    expect(page.get_by_role("heading", level=1, name="Alerts")).to_be_visible()
    check_the_page(page)

    # The filters find the ring's alert (and a filter that excludes it does not).
    page.get_by_label("Kind").select_option("ALERT_KIND_CHIP_DUMPING")
    page.get_by_label("Account id").fill(ann)
    page.get_by_role("button", name="Show alerts").click()
    expect(page.get_by_text("No alerts match these filters.")).to_be_visible()
    page.get_by_label("Kind").select_option("ALERT_KIND_MULTI_ACCOUNTING")
    page.get_by_label("Minimum severity").select_option("SEVERITY_HIGH")
    page.get_by_label("Status").select_option("ALERT_STATUS_OPEN")
    page.get_by_role("button", name="Show alerts").click()
    card = page.locator(f"li[data-alert-id='{alert['alertId']}']")
    expect(card).to_contain_text("Multi-accounting alert")
    expect(card).to_contain_text("High")
    shot(page, "1-alerts")

    # By keyboard: the alert's link, Enter; the focus lands on the new view's heading.
    card.get_by_role("link").focus()
    page.keyboard.press("Enter")
    title = page.get_by_role("heading", level=1, name=re.compile("Multi-accounting alert"))
    expect(title).to_be_visible()
    assert focused_heading(page).startswith("Multi-accounting alert")
    evidence = page.locator(".evidence", has=page.get_by_role("heading", name="Shared device"))
    expect(evidence).to_contain_text(device)
    expect(page.get_by_role("link", name=ann)).to_be_visible()
    # Each account named by its screen name next to its id.
    for account, name in ((ann, ann_name), (bob, bob_name)):
        expect(page.locator(f".account:has(a[href='#/accounts/{account}']) .screen-name")
               ).to_have_text(name)
    expect(page.get_by_text("In no case.")).to_be_visible()
    check_the_page(page)
    shot(page, "2-alert-evidence")

    page.get_by_role("link", name=ann).click()
    expect(page.get_by_role("heading", level=1, name="Risk profile")).to_be_visible()
    expect(page.get_by_role("link", name=bob)).to_be_visible()  # linked by the device
    expect(page.locator("dd .screen-name").first).to_have_text(ann_name)
    expect(page.locator("#risk-meter")).to_have_attribute("value", re.compile(r"^[1-9]\d*$"))
    check_the_page(page)
    shot(page, "3-risk-profile")
    page.go_back()

    page.get_by_label("Note (optional)").fill("Two accounts on one phone")
    page.get_by_role("button", name="Open a case from this alert").click()
    expect(page.get_by_role("heading", level=1, name=re.compile(r"^Case "))).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("Case opened.")  # read out, too
    case_id = page.url.rsplit("/", 1)[1]
    log = page.locator("table.log tbody tr")
    expect(log).to_have_count(1)

    page.get_by_role("button", name="Assign to me").click()
    expect(page.locator("table.log tr[data-action=assigned]")).to_contain_text(officer_id)
    page.get_by_label("Note", exact=True).fill("Same device id on both logins")
    page.get_by_role("button", name="Add note").click()
    expect(page.locator("table.log tr[data-action=note]")).to_contain_text("Same device id")
    expect(page.get_by_role("status")).to_have_text("Note added.")

    page.get_by_label(re.compile("Sanctioned")).check()
    page.get_by_role("group", name=f"Account {ann}").get_by_label("Terminate account").check()
    page.get_by_role("group", name=f"Account {bob}").get_by_label("Freeze wallet").check()
    page.get_by_label("Resolution note (required)").fill("One person, two accounts")
    page.get_by_role("button", name="Review resolution").click()
    confirm = page.locator(".confirm")
    expect(confirm).to_contain_text(f"Terminate account: {ann} ({ann_name})")
    expect(confirm).to_contain_text(f"Freeze wallet: {bob} ({bob_name})")
    check_the_page(page)
    shot(page, "4-resolve-review")
    expect(confirm).to_contain_text("only once a second officer approves them")
    page.get_by_role("button", name="Confirm resolution").click()
    # The freeze at once; the termination waits for a second officer.
    expect(page.get_by_role("status")).to_have_text(
        "Proposed: a second officer must approve the suspension or termination.")
    expect(page.locator("table.log tbody tr")).to_have_count(5)
    expect(page.get_by_text("You proposed them: another officer must approve them.")
           ).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^Approve"))).to_have_count(0)
    shot(page, "5-case-proposed")

    second_email, second_id = officer_account(run)
    other = console_page(browser, run, troubles)
    sign_in(other, second_email)
    expect(other.get_by_role("heading", level=1, name="Alerts")).to_be_visible()
    other.goto(f"{run.gateway}/console/index.html#/cases/{case_id}")
    approval = other.locator("form", has=other.get_by_role(
        "heading", name="Sanctions awaiting a second officer"))
    expect(approval).to_contain_text(f"Terminate account: {ann} ({ann_name})")
    expect(approval).to_contain_text(f"proposed by {officer_id}")
    check_the_page(other)
    other.get_by_role("button", name="Approve: they take effect").click()
    expect(other.get_by_role("status")).to_have_text(
        "Sanctions approved: the case is resolved.")
    expect(other.locator(".badges, dd").get_by_text("Sanctioned").first).to_be_visible()
    expect(other.locator("table.log tbody tr")).to_have_count(8)
    shot(other, "5-case-sanctioned")

    # The record, through the API: each step, its actor, in order.
    with httpx.Client(base_url=run.gateway, timeout=30, headers=officer) as api:
        case = api.get(f"/v1/compliance/cases/{case_id}").json()
    assert case["status"] == "CASE_STATUS_SANCTIONED"
    assert [(e["action"], e["actor"]) for e in case["log"]] == [
        ("opened", officer_id), ("assigned", officer_id), ("note", officer_id),
        ("sanction", officer_id), ("proposed", officer_id), ("approved", second_id),
        ("sanction", second_id), ("resolved", second_id),
    ]
    assert sorted((s["kind"], s["accountId"]) for s in case["sanctions"]) == sorted([
        ("SANCTION_KIND_FREEZE_WALLET", bob), ("SANCTION_KIND_TERMINATE_ACCOUNT", ann),
    ])

    # The sanctions take effect: the terminated player cannot sign in; the other's wallet
    # is frozen.
    refused = poll(lambda: (r := login(run, ann_email)).status_code == 400 and r,
                   "the terminated player's login refused")
    assert "closed" in refused.text
    bob_bearer = bearer(run, bob_email)
    with httpx.Client(base_url=run.gateway, timeout=30, headers=bob_bearer) as api:
        poll(lambda: api.get("/v1/wallet/balances").json().get("frozen"), "bob's wallet frozen")

    # After a reload (api.js signs the tab back in with its refresh token) the console
    # shows the alert confirmed and in its case.
    page.goto(f"{run.gateway}/console/index.html#/alerts/{alert['alertId']}")
    page.reload()
    expect(page.get_by_role("link", name=f"case {case_id[:8]}")).to_be_visible()
    expect(page.locator("dd").get_by_text("Confirmed")).to_be_visible()

    # The same case on a desktop screen, from the cases list (resolved: not open).
    page.set_viewport_size({"width": 1280, "height": 900})
    page.get_by_role("link", name="Cases", exact=True).click()
    page.get_by_label("Status").select_option("CASE_STATUS_SANCTIONED")
    page.get_by_label("Assigned to me").check()
    page.get_by_role("button", name="Show cases").click()
    page.get_by_role("link", name=f"Case {case_id[:8]}").click()
    expect(page.locator("table.log tbody tr")).to_have_count(8)
    check_the_page(page)
    shot(page, "7-case-desktop")
    assert troubles == []


def test_a_player_without_the_compliance_role_is_refused(
    console_stack: DevRun, browser: Browser
) -> None:
    run = console_stack
    email = f"player-{uuid.uuid4().hex[:8]}@example.com"
    assert register(run, email).status_code == 200
    troubles: list[str] = []
    page = console_page(browser, run, troubles)
    sign_in(page, email)
    expect(page.get_by_role("heading", level=1, name="Not a compliance account")).to_be_visible()
    expect(page.get_by_role("navigation")).to_be_hidden()
    expect(page.get_by_role("link", name="Alerts")).to_have_count(0)
    shot(page, "6-refused")
    # Typing a console address changes nothing: the role is checked before every view.
    page.goto(f"{run.gateway}/console/index.html#/cases")
    page.reload()
    expect(page.get_by_role("heading", level=1, name="Not a compliance account")).to_be_visible()
    with httpx.Client(base_url=run.gateway, timeout=30, headers=bearer(run, email)) as api:
        assert api.get("/v1/compliance/alerts").status_code == 403  # and the API says so
    page.get_by_role("button", name="Sign out").first.click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert troubles == []
