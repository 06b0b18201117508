"""Lobby chat in the browser, end to end: the web client (web/, served by the gateway) in
Debian's Chromium against the real stack (`tavla dev`, the session's shared
`dev_stack`). Two players register through the client's forms and open the lobby; one
says hello in the USD room and the other sees it under the sender's screen name; an
offensive message (disguised: "l0ser") is refused with the server's reason and reaches
nobody; the reply that follows does. Then one mutes the other with the Mute button beside
their line: the muted player's lines go, and stay gone after a reload (the server keeps
the mute), while what the muted player says next never reaches the muting player."""

from __future__ import annotations

import random

from playwright.sync_api import Browser, Locator, Page, expect

from tests.e2e.devstack import DevRun
from tests.e2e.test_web_client import Player, browser, register_and_deposit, shot  # noqa: F401  (the fixture)


def lobby_chat(page: Page) -> tuple[Locator, Locator]:
    """The lobby chat's log and its form, once the USD room is open."""
    page.get_by_role("link", name="Lobby").click()
    panel = page.get_by_role("region", name="Lobby chat")
    expect(panel.get_by_label("Room")).to_have_value("USD")
    return panel.get_by_role("list", name="Lobby chat"), panel.get_by_role(
        "form", name="Send a message to the lobby"
    )


def test_two_players_chat_in_the_lobby_and_an_offensive_message_is_refused(
    dev_stack: DevRun, browser: Browser  # noqa: F811
) -> None:
    home, away = random.sample(range(1, 0xFFFF), 2)
    ann = Player(browser, dev_stack.gateway, "ann", home, phone=True)
    bob = Player(browser, dev_stack.gateway, "bob", away, phone=False)
    register_and_deposit((ann, bob))
    ann_log, ann_form = lobby_chat(ann.page)
    bob_log, bob_form = lobby_chat(bob.page)

    ann_form.get_by_label("Message").fill("anyone up for a 5 point match?")
    ann_form.get_by_role("button", name="Send").click()
    expect(bob_log).to_contain_text(f"{ann.name}: anyone up for a 5 point match?")
    expect(ann_log).to_contain_text(f"{ann.name}: anyone up for a 5 point match?")

    bob_form.get_by_label("Message").fill("what a l0ser")
    bob_form.get_by_role("button", name="Send").click()
    refusal = bob.page.get_by_role("region", name="Lobby chat").locator("p.message")
    expect(refusal).to_contain_text("[offensive_language]")
    bob_form.get_by_label("Message").fill("sure, open a table")
    bob_form.get_by_role("button", name="Send").click()
    expect(ann_log).to_contain_text(f"{bob.name}: sure, open a table")
    shot(ann.page, "lobby-chat")
    for player in (ann, bob):
        log = player.page.get_by_role("list", name="Lobby chat")
        expect(log).not_to_contain_text("l0ser")

    # Ann mutes Bob beside his line: his lines go, and he is in her Muted list.
    ann_log.get_by_role("button", name=f"Mute {bob.name}").first.click()
    expect(ann_log).not_to_contain_text("sure, open a table")
    ann_panel = ann.page.get_by_role("region", name="Lobby chat")
    expect(ann_panel.get_by_role("list", name="Muted players")).to_contain_text(bob.name)
    # Kept by the server: after a reload, what Bob said before and says now never shows.
    ann.page.reload()
    ann_log, ann_form = lobby_chat(ann.page)
    expect(ann_log).to_contain_text(f"{ann.name}: anyone up for a 5 point match?")
    bob_form.get_by_label("Message").fill("hello? anyone?")
    bob_form.get_by_role("button", name="Send").click()
    expect(bob_log).to_contain_text(f"{bob.name}: hello? anyone?")
    ann_form.get_by_label("Message").fill("quiet in here now")
    ann_form.get_by_role("button", name="Send").click()
    expect(ann_log).to_contain_text(f"{ann.name}: quiet in here now")
    expect(bob_log).to_contain_text(f"{ann.name}: quiet in here now")  # muting is one way
    expect(ann_log).not_to_contain_text("hello? anyone?")
    expect(ann_log).not_to_contain_text("sure, open a table")
    for player in (ann, bob):
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
