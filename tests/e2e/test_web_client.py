"""The browser test: the web client (web/, served by the gateway) in Debian's
Chromium, driven by Playwright, against the real stack (`tavla dev`: every service,
PostgreSQL, the broker, Envoy, geo on its dev databases).

Two browser contexts (one phone-sized) register through the client's forms, deposit
sandbox dollars, enter the queue for a $10 money game and meet; they play real moves by
clicking checkers on the SVG board (each play one of the game's legal plays, confirmed
at once), chat, and one reloads mid-game and is back in the seat; then the player on
roll doubles and the other drops. Both see their balances settled to the cent and their
ratings moved, on the client's own account page; a deposit from Florida is refused with
the server's reason; in the lobby one opens a table, the other sees the commission it
would cost, joins, resigns and is settled again; a deposit limit and a self-exclusion
are set through the forms. Players are shown by their screen names at the table, in
table chat, in the lobby's tables and on its leaderboard.
Plays are made by mouse clicks, by keyboard (focus a point, Enter) and by dragging.

Expected figures, by hand from the house rules (../shared/reference, "Commisions when
Playing for Real Money", and the FIBS formula of matchmaking's README):
- a dropped double ends the game at the cube before the double: W = $10 x 1 x 1 = $10;
- commission, up to $20: 4.9 % from each player, the winner paying both: 2 x $0.49;
  the reference's own example ("$9.02 will be added ... deducted by $10"); two new
  players at 1500 are both below 1550, so no rating increase applies;
- so from $100.00 each: the winner ends on $109.02, the loser on $90.00, nothing held;
- ratings: 1500 v 1500, experience 0 (K = 5), one point: 4 x 5 x 1/2 = 10 points each way.

Screenshots go to artifacts/screenshots/ (gitignored). Chromium missing fails the test.
"""

from __future__ import annotations

import random
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from services.geo.devdata import FLORIDA_IP, malta_address
from tests.e2e.devstack import DevRun
from tests.support.browser import chromium

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "artifacts" / "screenshots"
PASSWORD = "correct horse battery"
MOVES_BEFORE_THE_DOUBLE = 4
TIMEOUT_MS = 30_000


@pytest.fixture
def stack(dev_stack: DevRun) -> DevRun:
    """The running platform this test plays on: the session's shared `tavla dev`
    (tests/e2e/conftest.py; it trusts the one X-Forwarded-For hop that places these
    players in Malta, and waves the queue every half second)."""
    return dev_stack


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for a file's tests (each player has a browser context of its own);
    a launch costs 1.5 s of CPU and 4 to 5 s on the loaded machine."""
    # The machine is shared and slow: registration's password hashing alone takes seconds.
    expect.set_options(timeout=TIMEOUT_MS)
    with chromium() as launched:
        yield launched


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


class Player:
    """One person in one browser context, from their own Malta address."""

    def __init__(self, browser: Browser, base: str, name: str, n: int, phone: bool) -> None:
        viewport = {"width": 390, "height": 844} if phone else {"width": 1280, "height": 900}
        self.address = malta_address(n)
        self.context: BrowserContext = browser.new_context(
            viewport=viewport, extra_http_headers={"x-forwarded-for": self.address})
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.outside: list[str] = []
        self.page.on("request", lambda r: None if r.url.startswith(base) else
                     self.outside.append(r.url))
        self.base = base
        self.name = f"{name}{uuid.uuid4().hex[:6]}"

    def register(self) -> None:
        self.send_registration()
        self.registered()

    def send_registration(self) -> None:
        """Fill in the registration form and send it (`registered` waits for the answer)."""
        page = self.page
        page.goto(f"{self.base}/#/register")
        page.get_by_label("Email").fill(f"{self.name}@example.com")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_label("Display name").fill(self.name)
        page.get_by_label(re.compile("^Residence")).fill("MT")
        page.get_by_label("Date of birth").fill("1990-04-21")
        page.get_by_role("button", name="Register").click()

    def registered(self) -> None:
        expect(self.page.get_by_role("heading", name=self.name)).to_be_visible()

    def deposit(self, amount: str) -> None:
        self.send_deposit(amount)
        self.deposited(amount)

    def send_deposit(self, amount: str) -> None:
        """Send the deposit form for `amount` USD (`deposited` waits for it to land)."""
        form = self.page.get_by_role("form", name="Deposit", exact=True)
        form.get_by_label("Amount").fill(amount)
        form.get_by_role("button", name="Deposit").click()

    def deposited(self, amount: str) -> None:
        form = self.page.get_by_role("form", name="Deposit", exact=True)
        expect(form.get_by_role("alert")).to_contain_text("USD")
        self.expect_usd(f"{amount} USD", "0.00 USD")

    def expect_usd(self, available: str, held: str, reload: bool = False) -> None:
        row = self.page.locator("tr[data-currency=USD]")
        deadline = time.monotonic() + 60
        while reload and time.monotonic() < deadline:
            if (row.count() and row.locator(".available").inner_text() == available
                    and row.locator(".held").inner_text() == held):
                break
            self.page.wait_for_timeout(500)
            self.page.reload()
            self.page.locator("#balances").wait_for()
        expect(row.locator(".available")).to_have_text(available, timeout=TIMEOUT_MS)
        expect(row.locator(".held")).to_have_text(held, timeout=TIMEOUT_MS)

    def enter_queue(self, stake: str) -> None:
        page = self.page
        page.get_by_role("link", name="Lobby").click()
        queue = page.get_by_role("form", name="Play now: enter the queue")
        queue.get_by_label("Stake").fill(stake)
        queue.get_by_label("Currency").select_option("USD")
        queue.get_by_role("button", name="Find an opponent").click()
        expect(page.locator("p.ticket")).to_be_visible()

    def game_id(self) -> str:
        self.page.wait_for_url(re.compile(r"#/game/"), timeout=60_000)
        return self.page.url.rsplit("/", 1)[-1]

    def phase(self) -> dict[str, str]:
        found: dict[str, str] = self.page.locator("#phase").evaluate(
            "e => ({...e.dataset})")
        return found

    def wait_for_version(self, after: int) -> None:
        """Until this page shows the game past version `after` (from its stream or from the
        answer to its own decision)."""
        self.page.wait_for_function(
            "after => Number(document.getElementById('phase')?.dataset.version ?? -1) > after",
            arg=after,
        )

    def send_moves_late(self, delay_ms: int) -> None:
        """Until the page is reloaded, its moves leave it `delay_ms` late (as they may when
        the machine's cores are busy): the page's own fetch, wrapped."""
        self.page.evaluate(
            """delay => {
                const send = window.fetch;
                window.fetch = (url, init) => String(url).endsWith(":move")
                    ? new Promise((r) => setTimeout(r, delay)).then(() => send(url, init))
                    : send(url, init);
            }""",
            delay_ms,
        )

    def legal_plays(self, game_id: str) -> list[dict[str, Any]]:
        plays: list[dict[str, Any]] = self.page.evaluate(
            """async (id) => {
                const { api } = await import("/js/api.js");
                return (await api.get(`/v1/games/${id}`)).legalPlays;
            }""", game_id)
        return plays

    def play(self, game_id: str, how: str) -> str:
        """Move the first legal play's checkers on the board, one die at a time, by mouse
        clicks, by keyboard (focus a point, Enter) or by dragging; then confirm it whole."""
        (play, *_) = self.legal_plays(game_id)
        board = self.page.locator("svg.board").first
        confirm = self.page.locator("#confirm")
        for step in play["steps"]:
            expect(confirm).to_be_disabled()  # no part of a play is ever sent
            start = board.locator(f'[data-point="{step.get("fromPoint", 0)}"]')
            end = board.locator(f'[data-point="{step.get("toPoint", 0)}"]')
            if how == "keys":
                start.focus()
                self.page.keyboard.press("Enter")
                expect(end).to_have_class(re.compile("target"))
                end.focus()
                self.page.keyboard.press("Enter")
            elif how == "drag":
                start.drag_to(end)
            else:
                start.click()
                end.click()
        expect(confirm).to_be_enabled()
        expect(confirm).to_contain_text(play["notation"] or "no move")
        if how == "keys":
            expect(confirm).to_be_focused()
            self.page.keyboard.press("Enter")
        else:
            confirm.click()
        notation: str = play["notation"]
        return notation

    def rating(self) -> str:
        self.page.get_by_role("link", name="Account").click()
        text: str = self.page.locator("#rating").inner_text()
        return text


def register_and_deposit(players: Sequence[Player], amount: str = "") -> None:
    """Each player registers (and deposits ``amount`` USD, if given) through the forms, every
    player's form sent before any answer is awaited: the stack serves them side by side.
    One after the other, eight players took 50 s on the loaded machine, most of it each one
    waiting on page loads and on the sandbox provider's confirmation in turn."""
    for player in players:
        player.send_registration()
    for player in players:
        player.registered()
    if not amount:
        return
    for player in players:
        player.send_deposit(amount)
    for player in players:
        player.deposited(amount)


def wait_for_turn(players: list[Player], after: int) -> Player:
    """The player whose decision it is once both pages show a version past `after`.

    Each page is awaited on its own state (the version its stream or its own call last
    showed); then, while the two briefly disagree (one a version ahead), until one of
    them shows its player's turn."""
    try:
        for player in players:
            player.wait_for_version(after)
    except PlaywrightTimeoutError:
        pass
    else:
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while time.monotonic() < deadline:
            for player in players:
                state = player.phase()
                if state.get("awaiting") == "me" and state["status"] == "GAME_STATUS_IN_PROGRESS":
                    return player
            players[0].page.wait_for_timeout(100)
    seen = [
        {**p.phase(), "shows": p.page.locator("#phase").inner_text(),
         "status": p.page.locator("#status").inner_text()}
        for p in players
    ]  # fmt: skip
    pytest.fail(f"nobody's turn after version {after}: {seen}")


def test_two_browsers_meet_play_for_money_and_are_settled_to_the_cent(
    stack: DevRun, browser: Browser
) -> None:
    started = time.monotonic()
    # Each in a Malta /64 of their own, apart from the other tests' players on the stack.
    home, away = random.sample(range(1, 0xFFFF), 2)
    ann = Player(browser, stack.gateway, "ann", home, phone=True)
    bob = Player(browser, stack.gateway, "bob", away, phone=False)
    players = [ann, bob]
    register_and_deposit(players, "100.00")
    shot(ann.page, "01-account-phone")

    for player in players:
        player.enter_queue("10.00")
    shot(bob.page, "02-queue")
    game_id = ann.game_id()
    assert bob.game_id() == game_id
    for player in players:
        expect(player.page.locator("svg.board [data-point]")).to_have_count(26)

    # At the table each sees both by their screen names.
    expect(ann.page.locator(".players")).to_contain_text(f"{ann.name} (you)")
    expect(ann.page.locator(".players")).to_contain_text(bob.name)
    expect(bob.page.locator(".players")).to_contain_text(ann.name)

    # Chat across the table.
    ann.page.get_by_role("textbox", name="Message").fill("good luck")
    ann.page.get_by_role("button", name="Send").click()
    expect(bob.page.get_by_role("list", name="Table chat")).to_contain_text(
        f"{ann.name}: good luck")

    # Real moves, each clicked on the board; the first roll is the server's opening roll.
    version = int(ann.phase()["version"]) - 1
    moves = 0
    while moves < MOVES_BEFORE_THE_DOUBLE:
        actor = wait_for_turn(players, version)
        state = actor.phase()
        version = int(state["version"])
        if state["phase"] == "TURN_PHASE_ROLL_OR_DOUBLE":
            actor.page.get_by_role("button", name="Roll").click()
            continue
        assert state["phase"] == "TURN_PHASE_MOVE", state
        reloading = moves == 1
        if reloading:
            # The play before the reload leaves the page late, as on a loaded machine: a
            # reload before it is made would cancel it (the move never made, the game
            # waiting on this player), so the test reloads once the page shows it made.
            actor.send_moves_late(1000)
        actor.play(game_id, ("click", "keys", "drag", "click")[moves])
        moves += 1
        if moves == 1:
            shot(actor.page, "03-board-after-first-play")
            shot(ann.page, "03-board-phone")
        if reloading:
            # A reload mid-game: the tab signs back in and the board is back.
            actor.wait_for_version(version)
            actor.page.reload()
            expect(actor.page.locator("svg.board [data-point]")).to_have_count(26)
            actor.wait_for_version(version)  # with the move made before it

    # The player on roll doubles instead of rolling; the other drops.
    doubler = wait_for_turn(players, version)
    assert doubler.phase()["phase"] == "TURN_PHASE_ROLL_OR_DOUBLE"
    version = int(doubler.phase()["version"])
    doubler.page.get_by_role("button", name="Double").click()
    dropper = wait_for_turn(players, version)
    assert dropper is not doubler and dropper.phase()["phase"] == "TURN_PHASE_CUBE_RESPONSE"
    shot(dropper.page, "04-double-offered")
    dropper.page.get_by_role("button", name="Drop").click()
    for player in players:
        expect(player.page.locator("#phase")).to_have_attribute(
            "data-status", "GAME_STATUS_FINISHED")
    expect(doubler.page.locator("#phase")).to_contain_text("You won")
    expect(dropper.page.locator("#phase")).to_contain_text("You lost")
    expect(doubler.page.locator("pre.record")).to_contain_text("Drops")
    expect(doubler.page.locator("#error-rate")).to_contain_text("PR", timeout=60_000)
    shot(doubler.page, "05-game-over-analysis")

    # Settled to the cent (see the module docstring for the figures).
    for player in players:
        player.page.get_by_role("link", name="Account").click()
    doubler.expect_usd("109.02 USD", "0.00 USD", reload=True)
    dropper.expect_usd("90.00 USD", "0.00 USD", reload=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "1510" not in doubler.rating():
        doubler.page.wait_for_timeout(500)
    assert doubler.rating() == "rating 1510"
    assert dropper.rating() == "rating 1490"
    shot(doubler.page, "06-winner-settled")
    shot(dropper.page, "07-loser-settled")

    # Real money where geo allows it only: from Florida the deposit is refused, nothing moves.
    doubler.context.set_extra_http_headers({"x-forwarded-for": FLORIDA_IP})
    refused = doubler.page.get_by_role("form", name="Deposit", exact=True)
    refused.get_by_label("Amount").fill("20.00")
    refused.get_by_role("button", name="Deposit").click()
    expect(refused.get_by_role("alert")).to_contain_text("location_restricted")
    doubler.expect_usd("109.02 USD", "0.00 USD")
    doubler.context.set_extra_http_headers({"x-forwarded-for": doubler.address})

    # The lobby: the winner opens a $10 table; the other sees it with the commission they
    # would pay there (4.9 % of $10: both ratings, 1510 and 1490, are below 1550, no
    # increase), joins, resigns a single game, and the owner accepts.
    doubler.page.get_by_role("link", name="Lobby").click()
    opening = doubler.page.get_by_role("form", name="Open a table")
    opening.get_by_label("Stake").fill("10.00")
    opening.get_by_label("Currency").select_option("USD")
    opening.get_by_role("button", name="Open table").click()
    expect(opening.get_by_role("alert")).to_contain_text("waiting for an opponent")
    dropper.page.get_by_role("link", name="Lobby").click()
    listed = dropper.page.get_by_role("table", name="Open tables").locator(
        "tr", has_text="10.00 USD a point").filter(has_text=f"{doubler.name} (1510)")
    expect(listed.locator(".commission")).to_have_text("0.49 USD (4.9 %)")
    # On the leaderboard by name: among the top, or as the viewer's own place below them.
    expect(dropper.page.get_by_role("table", name="Leaderboard")).to_contain_text(
        f"{dropper.name}1490")
    shot(dropper.page, "08-lobby")
    listed.get_by_role("button", name="Join").click()
    second = dropper.game_id()
    assert second != game_id and doubler.game_id() == second
    dropper.page.locator("#resign-level").select_option("RESULT_TYPE_SINGLE")
    dropper.page.get_by_role("button", name="Resign").click()
    doubler.page.get_by_role("button", name="Accept resignation").click()
    for player in players:
        expect(player.page.locator("#phase")).to_have_attribute(
            "data-status", "GAME_STATUS_FINISHED")
        player.page.get_by_role("link", name="Account").click()
    # Another $10 game won by the same player: +$9.02 and -$10.00 again.
    doubler.expect_usd("118.04 USD", "0.00 USD", reload=True)
    dropper.expect_usd("80.00 USD", "0.00 USD", reload=True)

    # A deposit limit, then a break: self-excluded until a date, shown on the account.
    limit = dropper.page.get_by_role("form", name="Set a deposit limit")
    limit.get_by_label("Period").select_option("LIMIT_PERIOD_DAY")
    limit.get_by_label("Amount").fill("50.00")
    limit.get_by_role("button", name="Set limit").click()
    expect(dropper.page.get_by_role("list", name="Deposit limits")).to_contain_text(
        "day: 50.00 USD")
    dropper.page.once("dialog", lambda dialog: dialog.accept())
    exclusion = dropper.page.get_by_role("form", name="Take a break (self-exclusion)")
    exclusion.get_by_label("Until").fill("2030-01-01")
    exclusion.get_by_role("button", name="Self-exclude").click()
    expect(dropper.page.locator("p.error")).to_contain_text("Self-excluded until")
    shot(dropper.page, "09-limit-and-self-exclusion")

    # Logout ends the session: a reload stays signed out.
    ann.page.get_by_role("button", name="Log out").click()
    ann.page.reload()
    expect(ann.page.get_by_role("heading", name="Sign in", level=2)).to_be_visible()

    for player in players:
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
        player.context.close()
    print(f"web client e2e: {time.monotonic() - started:.1f}s in the browser")
