"""Tournaments in the browser, end to end: the web client (web/, served by the gateway) in
Debian's Chromium against the real stack (`tavla dev`, the session's shared `dev_stack`).

An operator creates a two-seat play-money Sit & Go with `tavla tournament create` and
the run's ops key. Two players register through the client's forms and find it in the
tournament lobby with its rules and prizes by place; one asks to register before having
any play money and is told why not, tops up and registers; the other registers from the
tournament's page. The second seat fills it: it starts, and both see the bracket drawn with the two
of them by screen name in the final, and the seed revealed, whose sha256 is the
commitment shown before the draw."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
import uuid
from pathlib import Path

from playwright.sync_api import Browser, Page, expect

from tests.e2e.devstack import REPO, DevRun
from tests.e2e.test_web_client import Player, browser, register_and_deposit, shot  # noqa: F401  (the fixture)


def create_sit_and_go(stack: DevRun, tmp_path: Path, name: str) -> dict[str, object]:
    """A 2-seat PLAY Sit & Go, 100.00 + 5.00, created as an operator does."""
    return create_tournament(stack, tmp_path, name, {
        "sitAndGo": {"seats": 2}, "matchLengths": [1], "clock": "blitz", "currency": "PLAY",
        "buyIn": "10000", "entryFee": "500", "prizeTable": "standard",
    })


def create_tournament(
    stack: DevRun, tmp_path: Path, name: str, rules: dict[str, object]
) -> dict[str, object]:
    """A tournament under ``rules`` (proto3 JSON), created with `tavla tournament create`
    and the run's ops key, as an operator does: the tournament as JSON."""
    request = tmp_path / f"tournament-{uuid.uuid4().hex[:8]}.json"
    request.write_text(json.dumps({"name": name, "idempotencyKey": uuid.uuid4().hex,
                                   "rules": rules}))
    created = subprocess.run(
        [sys.executable, "-m", "services.cli", "tournament", "create", "--request", str(request),
         "--address", stack.grpc_address("tournaments"),
         "--key-file", str(stack.service_keys.private_key_file("ops"))],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    answer: dict[str, object] = json.loads(created.stdout)
    return answer


def top_up_play_money(page: Page) -> None:
    page.get_by_role("link", name="Account").click()
    form = page.get_by_role("form", name="Play money")
    form.get_by_role("button", name="Top up play money").click()
    expect(form.get_by_role("alert")).to_contain_text("PLAY")


def test_two_players_fill_a_sit_and_go_and_both_see_the_bracket_drawn(
    dev_stack: DevRun, browser: Browser, tmp_path: Path  # noqa: F811
) -> None:
    name = f"Sit & Go 2 {uuid.uuid4().hex[:6]}"
    tournament = create_sit_and_go(dev_stack, tmp_path, name)
    tid = str(tournament["tournamentId"])
    commitment = str(tournament["seedCommitment"])
    home, away = random.sample(range(1, 0xFFFF), 2)
    ann = Player(browser, dev_stack.gateway, "ann", home, phone=False)
    bob = Player(browser, dev_stack.gateway, "bob", away, phone=True)
    register_and_deposit((ann, bob))

    # The lobby: the rules as data; no play money yet, so registration is refused, with why.
    row = ann.page.locator(f'tr[data-tournament="{tid}"]')
    ann.page.get_by_role("link", name="Tournaments", exact=True).click()
    expect(row.locator(".kind")).to_have_text("Sit & Go")
    expect(row.locator(".buy-in")).to_have_text("100.00 PLAY + 5.00 PLAY fee")
    expect(row.locator(".seats")).to_have_text("0/2")
    expect(row.locator(".status")).to_have_text("registering")
    # The standard table's row for two: the winner takes the pool of 2 x 100.00.
    expect(row.locator(".rules dd").last).to_have_text("1: 200.00 PLAY (100 %), for 2 entrants")
    row.get_by_role("button", name="Register").click()
    refusal = ann.page.locator("p.entry-message")
    expect(refusal).to_contain_text(f"{name}: ")
    expect(refusal).to_have_class("message entry-message error")
    top_up_play_money(ann.page)
    ann.page.get_by_role("link", name="Tournaments", exact=True).click()
    row.get_by_role("button", name="Register").click()
    expect(row.locator(".seats")).to_have_text("1/2")
    expect(row.get_by_role("button", name="Unregister")).to_be_visible()

    # Bob registers from the tournament's page: the commitment is there, the seed not yet.
    top_up_play_money(bob.page)
    bob.page.get_by_role("link", name="Tournaments", exact=True).click()
    bob.page.locator(f'tr[data-tournament="{tid}"]').get_by_role("link", name=name).click()
    expect(bob.page.get_by_role("heading", name=name)).to_be_visible()
    expect(bob.page.locator(".commitment")).to_have_text(commitment)
    expect(bob.page.locator(".revealed")).to_have_text("revealed when registration closes")
    bob.page.get_by_role("button", name="Register").click()

    # The last seat is taken: the draw; both see the final by screen name, and the seed.
    ann.page.get_by_role("link", name=name).click()
    for player in (ann, bob):
        final = player.page.locator('.bracket .round[data-round="1"]')
        expect(final.locator("h4")).to_have_text("Final")
        expect(final.locator(".seat")).to_have_count(2)
        for someone in (ann, bob):
            expect(final).to_contain_text(someone.name)
        expect(player.page.locator(".revealed")).to_have_text(re.compile("^[0-9a-f]{64}$"))
        seed = player.page.locator(".revealed").inner_text()
        assert hashlib.sha256(bytes.fromhex(seed)).hexdigest() == commitment
        expect(player.page.locator(".commitment")).to_have_text(commitment)
    shot(ann.page, "tournament-bracket")
    for player in (ann, bob):
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
