"""Table stakes in the browser, end to end: the web client (web/, served by the gateway) in
Debian's Chromium against the real stack (`tavla dev`, the session's shared `dev_stack`).

Two players register and deposit $10.00 each; Ann opens a $1.00-a-point money game for
table stakes of $2.00 each (two games at cube 1), Bob sees it listed and joins. Each game
one legal play is made on the board, then Ann resigns a single game and Bob accepts; the
pages follow the session's next game by themselves, show each stake left and the cube cap,
refuse a double past the cap with the reason, and show the session's end once Bob holds
both stakes.

Expected figures, by hand from the wallet's schedule (services/wallet/domain/schedules/
gammonempire-2026-01.toml: a win sum W up to $20 pays 4.9 % from each player, rounded half
up, the winner paying both; new players at 1500, and 1510/1490 after one game, are both
below 1550, so no rating increase applies):
- game 1: $2.00 at risk, so the cube may reach 2 (not 4); a single game, W = $1.00,
  commission 2 x 5 cents: Ann has $1.00 left at the table, Bob $2.00 + $1.00 - $0.10 = $2.90;
- game 2: $1.00 at risk (Ann's stake left), the cube capped at 1 (no double); a single
  game again: Ann $0.00, Bob $2.90 + $1.00 - $0.10 = $3.80, so Bob holds both stakes;
- the session ends, Bob's hold is released: Ann $8.00, Bob $8.00 + $3.80 = $11.80,
  nothing held; 20 cents went to the house.
"""

from __future__ import annotations

import random
import re

from playwright.sync_api import Browser, expect

from tests.e2e.devstack import DevRun
from tests.e2e.test_web_client import (  # noqa: F401  (browser: the fixture)
    Player,
    browser,
    register_and_deposit,
    shot,
    wait_for_turn,
)

SESSION_MS = 120_000  # a settlement travels GameEnded -> wallet -> Settled -> matchmaking


def next_game(player: Player, after: str) -> str:
    """The game this page followed the session on to, once it left game ``after``."""
    player.page.wait_for_function(
        "after => location.hash.startsWith('#/game/') && !location.hash.endsWith(after)",
        arg=after, timeout=SESSION_MS,
    )
    return player.game_id()


def one_play_then_to_roll(players: list[Player], game_id: str) -> Player:
    """The player on roll makes the first of their legal plays on the board; returns the
    other, then to roll or double (both pages past that play)."""
    for player in players:
        shown = player.page.locator(f'section[data-game="{game_id}"]')
        expect(shown.locator("svg.board [data-point]")).to_have_count(26)
        expect(shown.locator("#phase")).to_have_attribute("data-version", re.compile(r"^\d+$"))
    actor = wait_for_turn(players, int(players[0].phase()["version"]) - 1)
    state = actor.phase()
    assert state["phase"] == "TURN_PHASE_MOVE", state  # the server's opening roll
    actor.play(game_id, "click")
    following = wait_for_turn(players, int(state["version"]))
    assert following is not actor and following.phase()["phase"] == "TURN_PHASE_ROLL_OR_DOUBLE"
    return following


def resigns(loser: Player, winner: Player) -> None:
    loser.page.locator("#resign-level").select_option("RESULT_TYPE_SINGLE")
    loser.page.get_by_role("button", name="Resign").click()
    winner.page.get_by_role("button", name="Accept resignation").click()


def test_a_table_stakes_session_ends_when_one_player_holds_both_stakes(
    dev_stack: DevRun, browser: Browser  # noqa: F811
) -> None:
    home, away = random.sample(range(1, 0xFFFF), 2)
    ann = Player(browser, dev_stack.gateway, "ann", home, phone=True)
    bob = Player(browser, dev_stack.gateway, "bob", away, phone=False)
    players = [ann, bob]
    register_and_deposit(players, "10.00")

    ann.page.get_by_role("link", name="Lobby").click()
    opening = ann.page.get_by_role("form", name="Open a table")
    opening.get_by_label("Stake").fill("1.00")
    opening.get_by_label("Currency").select_option("USD")
    opening.get_by_label("Bring-in per player").fill("2.00")
    opening.get_by_role("button", name="Open table").click()
    expect(opening.get_by_role("alert")).to_contain_text("waiting for an opponent")
    bob.page.get_by_role("link", name="Lobby").click()
    listed = bob.page.get_by_role("table", name="Open tables").locator(
        "tr", has_text="1.00 USD a point, table stakes 2.00 USD each"
    ).filter(has_text=f"{ann.name} (1500)")
    shot(bob.page, "stakes-01-lobby")
    listed.get_by_role("button", name="Join").click()
    first = bob.game_id()
    assert ann.game_id() == first

    # Game 1: both stakes whole, the cube capped at 2; Ann resigns a single game.
    for player in players:
        stakes = player.page.get_by_label("Table stakes", exact=True)
        for who in players:
            expect(stakes).to_contain_text(f"{who.name} 2.00 USD")
        expect(stakes).to_contain_text("cube capped at 2 by the table stakes")
    to_roll = one_play_then_to_roll(players, first)
    expect(to_roll.page.get_by_role("button", name="Double")).to_be_enabled()
    resigns(ann, bob)

    # Game 2, followed by both pages: Ann has $1.00 left, so no double at all.
    second = next_game(ann, first)
    assert next_game(bob, first) == second != first
    for player in players:
        stakes = player.page.get_by_label("Table stakes", exact=True)
        expect(stakes).to_contain_text(f"{ann.name} 1.00 USD")
        expect(stakes).to_contain_text(f"{bob.name} 2.90 USD")
        expect(stakes).to_contain_text("cube capped at 1 by the table stakes")
    to_roll = one_play_then_to_roll(players, second)
    expect(to_roll.page.get_by_role("button", name="Double")).to_be_disabled()
    expect(to_roll.page.locator("#double-refused")).to_have_text(
        "no double: the cube may not reach 2 in this game (cube capped at 1 by the table stakes)"
    )
    shot(to_roll.page, "stakes-02-double-capped")
    resigns(ann, bob)

    # The session's end on both pages, which stay on the last game.
    for player in players:
        expect(player.page.locator("p.session")).to_have_text(
            f"Session over after 2 games: table stakes: {bob.name} holds both stakes",
            timeout=SESSION_MS,
        )
        stakes = player.page.get_by_label("Table stakes", exact=True)
        expect(stakes).to_contain_text(f"{bob.name} 3.80 USD")
        assert re.search(f"#/game/{second}$", player.page.url)
    shot(bob.page, "stakes-03-session-over")

    # Balances to the cent (the module docstring's figures), nothing left held.
    for player in players:
        player.page.get_by_role("link", name="Account").click()
    ann.expect_usd("8.00 USD", "0.00 USD", reload=True)
    bob.expect_usd("11.80 USD", "0.00 USD", reload=True)
    for player in players:
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
        player.context.close()
