"""An eight-seat USD Sit & Go in the browser, end to end: the web client (web/, served by
the gateway) in Debian's Chromium against the real stack (`tavla dev`, the session's
shared `dev_stack`), from registration to the payout.

An operator creates the Sit & Go with `tavla tournament create` and the run's ops key:
8 seats, 10.01 USD buy-in + 0.99 USD fee, matches to 1 point, the `standard` prize
table. Eight players (one browser context each) register through the client's forms,
deposit sandbox dollars and take a seat from the tournament lobby; before the eighth,
the tournament's page shows the seed's commitment and no seed. The eighth seat starts
it: every page shows the seed revealed, whose sha256 is that commitment, and the drawn
seating, which the test redraws from the seed by the method the tournaments README
publishes, with `hmac` alone (`drawn_seating`), not the service's code.

Each match is played from the browser: both players follow "Play your match" from the
tournament's page to the table; the bottom seat resigns a single game and the top seat
accepts (a 1-point match: the match). One player, the bottom seat of r1m2, never comes to
the table: the game cancels the session when the reconnect window passes with nobody
having moved, and the top seat wins by forfeit ("no show"). So the top seats win
throughout: with the drawn order a..h, the final is a (r1m1, r2m1) against e (r1m3,
r2m2), and a is the champion.

Worked by hand (as tests/integration/tournaments/test_tournaments_sit_and_go.py): each
deposits 20.00 and registers: 9.00 available, 11.00 held. At the start the 8 fees,
8 x 0.99 = 7.92, become house revenue and 10.01 stays held each. The pool is
8 x 10.01 = 80.08, paid 65/35 (the 8-slot row of `standard`): 80.08 x 0.65 = 52.052
-> 52.05 and 80.08 x 0.35 = 28.028 -> 28.02, the one cent left over to 1st (the
remainder rule): 52.06 and 28.02. So the champion ends on 9.00 + 52.06 = 61.06, the
runner-up on 9.00 + 28.02 = 37.02, everyone else on 9.00, nothing held. The wallet's
audit (`tavla wallet audit`) is clean.

A scheduled event below its minimum (4 entrants, registration closing about half a
minute after it is created): two players deposit 50.00 and register from the lobby, each
then holding 25.00 + 2.50 = 27.50 with 22.50 left. At the close it is cancelled, both see
why in the lobby, and both have all 50.00 back with nothing held; no fee is taken.

A satellite: a 2-seat USD Sit & Go at 5.00 + 0.25 whose prize is tickets to a 4-seat
target at 9.00 + 1.00; its pool, 2 x 5.00 = 10.00, buys exactly one ticket, the
champion's. Both deposit 20.00 and register from the lobby (14.75 left each), play the
final at the table (the bottom seat resigns), and the champion's ticket is held at the
target in their name: 14.75 available, 10.00 held, no cash won. The champion sees the
ticket on the satellite's page, follows it to the target, registers there and is in, with
the ticket shown used and their balance the same to the cent: no money moved. The audit is clean.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import random
import re
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from services.kit.devstack.postgres import SUPERUSER
from tests.e2e.devstack import REPO, DevRun
from tests.e2e.test_tournament_web_done import create_tournament
from tests.e2e.test_web_client import Player, browser, register_and_deposit, shot  # noqa: F401  (the fixture)
from tests.support.tournaments import scalar

SEATS = 8
NAMES = ("ann", "bob", "cem", "dia", "eve", "fay", "gus", "hal")
NO_SHOW_MATCH = "r1m2"  # its bottom seat never comes to the table
TOURNAMENT_FEE = 31  # the wallet's transfer code for entry fees (services/wallet/domain/ledger.py)
PLAY_DEADLINE_S = 240


def drawn_seating(seed: bytes, tournament_id: str, entrants: list[str]) -> list[str]:
    """The seating the README's method draws (services/tournaments/README.md, "Seating"),
    redone here from its words: the account ids sorted, then Fisher-Yates from the last
    position down, swapping position i with j uniform in 0..i; the numbers are the bytes
    of HMAC-SHA256(seed, "tournament:<id>:seating:<block>") for block 0, 1, ..., four at
    a time as a big-endian unsigned integer, kept when below the largest multiple of
    i + 1 not above 2^32 (taken modulo i + 1) and skipped otherwise."""
    def stream() -> Any:
        for block in range(1_000):
            label = f"tournament:{tournament_id}:seating:{block}".encode()
            yield from hmac.new(seed, label, hashlib.sha256).digest()

    numbers = stream()
    order = sorted(entrants)
    for i in range(len(order) - 1, 0, -1):
        while True:
            word = int.from_bytes(bytes(next(numbers) for _ in range(4)), "big")
            if word < 2**32 - 2**32 % (i + 1):
                break
        j = word % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def api_get(player: Player, path: str) -> Any:
    """A GET through the gateway as the page's own client makes it (its token)."""
    return player.page.evaluate(
        """async (path) => {
            const { api } = await import("/js/api.js");
            return await api.get(path);
        }""", path)


def account_id(player: Player) -> str:
    found: str = player.page.evaluate(
        "async () => (await import('/js/api.js')).api.accountId")
    return found


def follow_the_play_link(player: Player, tournament_id: str, match_id: str) -> None:
    """From the tournament's page towards the match's table by its "Play your match" link
    (the table is awaited apart, so that all of a round's players set off at once)."""
    page = player.page
    page.goto(f"{player.base}/#/tournament/{tournament_id}")
    page.locator(f'li[data-match="{match_id}"]').get_by_role(
        "link", name="Play your match").click()


def at_the_table(player: Player) -> None:
    expect(player.page.locator("svg.board [data-point]")).to_have_count(26)


def resign_and_accept(loser: Player, winner: Player) -> None:
    loser.page.locator("#resign-level").select_option("RESULT_TYPE_SINGLE")
    loser.page.get_by_role("button", name="Resign").click()
    winner.page.get_by_role("button", name="Accept resignation").click()
    for player in (winner, loser):
        expect(player.page.locator("#phase")).to_have_attribute(
            "data-status", "GAME_STATUS_FINISHED")


def play_out(
    players: dict[str, Player], watcher: Player, tournament_id: str, no_show: str = ""
) -> dict[str, Any]:
    """Every match as it comes into play: first both players (the opponent alone in the
    match ``no_show``) come to the new tables, all of them before any is decided, so that
    nobody stays away from a table long enough to forfeit it; then the bottom seats resign."""
    path = f"/v1/tournaments/{tournament_id}"
    seen: set[str] = set()
    deadline = time.monotonic() + PLAY_DEADLINE_S
    while time.monotonic() < deadline:
        tournament = api_get(watcher, path)
        if tournament["status"] == "STATUS_FINISHED":
            return dict(tournament)
        new = [m for m in tournament.get("bracket", [])
               if m.get("state") == "MATCH_STATE_PLAYING" and m["matchId"] not in seen]
        arriving: list[Player] = []
        setting_off = time.monotonic()
        for match in new:
            seen.add(match["matchId"])
            seats = [players[a] for a in match["players"]]
            coming = seats[:1] if match["matchId"] == no_show else seats
            for player in coming:
                follow_the_play_link(player, tournament_id, match["matchId"])
            arriving += coming
        for player in arriving:
            at_the_table(player)
        if arriving:  # within the game's presence window (silence 5 s + reconnect 10 s)
            print(f"{len(arriving)} at their tables in {time.monotonic() - setting_off:.1f}s")
        for match in (m for m in new if m["matchId"] != no_show):
            top, bottom = (players[a] for a in match["players"])
            resign_and_accept(bottom, top)
        if not new:
            watcher.page.wait_for_timeout(300)
    pytest.fail(f"not finished after {PLAY_DEADLINE_S}s: {api_get(watcher, path)}")


def wallet_audit(stack: DevRun) -> subprocess.CompletedProcess[str]:
    wallet_db = f"postgresql+asyncpg://{SUPERUSER}@127.0.0.1:{stack.postgres_port}/tavla_wallet"
    return subprocess.run(
        [sys.executable, "-m", "services.cli", "wallet", "audit"], cwd=REPO,
        env={**os.environ, "TAVLA_DATABASE_URL": wallet_db}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def fees_taken(stack: DevRun, tournament_id: str) -> object:
    """The house's revenue from the tournament's entry fees, from the wallet's ledger."""
    wallet_db = f"postgresql+asyncpg://{SUPERUSER}@127.0.0.1:{stack.postgres_port}/tavla_wallet"
    query = scalar(
        wallet_db, "SELECT sum(amount) FROM transfers WHERE code = :code AND reference = :ref",
        code=TOURNAMENT_FEE, ref=f"table:{tournament_id}",
    )
    # Playwright's sync API runs an event loop in this thread: the query gets one of its own.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, query).result()


def test_eight_players_fill_a_usd_sit_and_go_play_it_out_and_are_paid_by_the_table(
    dev_stack: DevRun, browser: Browser, tmp_path: Path  # noqa: F811
) -> None:
    started = time.monotonic()
    name = f"Sit & Go 8 {uuid.uuid4().hex[:6]}"
    created = create_tournament(dev_stack, tmp_path, name, {
        "sitAndGo": {"seats": SEATS}, "matchLengths": [1], "clock": "blitz",
        "currency": "USD", "buyIn": "1001", "entryFee": "99", "prizeTable": "standard",
    })
    tid = str(created["tournamentId"])
    commitment = str(created["seedCommitment"])
    people = [Player(browser, dev_stack.gateway, who, n, phone=False)
              for who, n in zip(NAMES, random.sample(range(1, 0xFFFF), SEATS), strict=True)]
    register_and_deposit(people, "20.00")
    players = {account_id(p): p for p in people}
    name_of = {account: p.name for account, p in players.items()}

    # Seven take a seat from the lobby; the tournament's page shows the commitment, no seed.
    for taken, player in enumerate(people, start=1):
        player.page.get_by_role("link", name="Tournaments", exact=True).click()
        row = player.page.locator(f'tr[data-tournament="{tid}"]')
        expect(row.locator(".buy-in")).to_have_text("10.01 USD + 0.99 USD fee")
        if taken == SEATS:
            first = people[0].page
            first.goto(f"{dev_stack.gateway}/#/tournament/{tid}")
            expect(first.locator(".status")).to_contain_text(f"seats {SEATS - 1}/{SEATS}")
            expect(first.locator(".commitment")).to_have_text(commitment)
            expect(first.locator(".revealed")).to_have_text("revealed when registration closes")
            expect(first.locator(".bracket-empty")).to_be_visible()
        row.get_by_role("button", name="Register").click()
        expect(row.locator(".seats")).to_have_text(f"{taken}/{SEATS}")
        if taken < SEATS:
            expect(row.get_by_role("button", name="Unregister")).to_be_visible()

    # The eighth seat closes it: the seed is revealed, and it draws the seating shown.
    watcher = people[0]
    expect(watcher.page.locator(".revealed")).to_have_text(re.compile("^[0-9a-f]{64}$"))
    seed = bytes.fromhex(watcher.page.locator(".revealed").inner_text())
    assert hashlib.sha256(seed).hexdigest() == commitment
    expect(watcher.page.locator(".commitment")).to_have_text(commitment)
    order = drawn_seating(seed, tid, list(players))
    assert api_get(watcher, f"/v1/tournaments/{tid}")["seating"] == order
    expect(watcher.page.locator(".seating")).to_have_text(", ".join(name_of[a] for a in order))
    first_round = watcher.page.locator('.bracket .round[data-round="1"]')
    for place in range(SEATS // 2):
        expect(first_round.locator(f'li[data-match="r1m{place + 1}"] .seat')).to_have_text(
            [name_of[order[2 * place]], name_of[order[2 * place + 1]]])
    shot(watcher.page, "sit-and-go-8-drawn")

    # The fees are the house's at the start; the buy-ins stay held as the pool.
    fees = 8 * 99
    deadline = time.monotonic() + 60
    while fees_taken(dev_stack, tid) != fees and time.monotonic() < deadline:
        watcher.page.wait_for_timeout(300)
    assert fees_taken(dev_stack, tid) == fees

    finished = play_out(players, watcher, tid, no_show=NO_SHOW_MATCH)

    champion, runner_up = order[0], order[4]
    final = next(m for m in finished["bracket"] if m["matchId"] == "r3m1")
    assert (final["players"], final["winnerAccountId"]) == ([champion, runner_up], champion)
    no_show = next(m for m in finished["bracket"] if m["matchId"] == NO_SHOW_MATCH)
    assert (no_show["decision"], no_show["winnerAccountId"]) == ("no_show", order[2])
    # The bracket page: the champion won the final, the no-show's match shows why.
    page = players[champion].page
    page.goto(f"{dev_stack.gateway}/#/tournament/{tid}")
    expect(page.locator(".status")).to_contain_text("finished")
    expect(page.locator('li[data-match="r3m1"] .seat.won')).to_have_text(
        f"{name_of[champion]} (won)")
    expect(page.locator(f'li[data-match="{NO_SHOW_MATCH}"] .match-note')).to_have_text(
        "1 point, decided by no show")
    standings = page.get_by_role("table", name="Standings")
    expect(standings.locator(f'tr[data-account="{champion}"] .prize')).to_have_text("52.06 USD")
    expect(standings.locator(f'tr[data-account="{runner_up}"] .prize')).to_have_text("28.02 USD")
    shot(page, "sit-and-go-8-champion")

    # Paid by the prize table to the cent (the docstring's figures), nothing left held.
    expected = {champion: "61.06 USD", runner_up: "37.02 USD", order[1]: "9.00 USD"}
    for account, available in expected.items():
        player = players[account]
        player.page.get_by_role("link", name="Account").click()
        player.expect_usd(available, "0.00 USD", reload=True)
    assert fees_taken(dev_stack, tid) == fees
    audit = wallet_audit(dev_stack)
    assert audit.returncode == 0 and "audit ok" in audit.stdout, audit.stdout + audit.stderr

    for player in people:
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
        player.context.close()
    print(f"sit & go 8 e2e: {time.monotonic() - started:.1f}s in the browser")


def timestamp(moment: datetime) -> str:
    """A proto3 JSON Timestamp (RFC 3339, UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_scheduled_event_below_its_minimum_is_cancelled_and_every_entry_refunded(
    dev_stack: DevRun, browser: Browser, tmp_path: Path  # noqa: F811
) -> None:
    people = [Player(browser, dev_stack.gateway, who, n, phone=False)
              for who, n in zip(("ida", "jon"), random.sample(range(1, 0xFFFF), 2), strict=True)]
    register_and_deposit(people, "50.00")
    # The close leaves time for both to register on a busy machine, not much more.
    closes = datetime.now(UTC) + timedelta(seconds=30)
    created = create_tournament(dev_stack, tmp_path, f"Saturday {uuid.uuid4().hex[:6]}", {
        "scheduled": {"registrationOpensAt": timestamp(closes - timedelta(minutes=5)),
                      "registrationClosesAt": timestamp(closes),
                      "startsAt": timestamp(closes + timedelta(minutes=1)),
                      "minEntrants": 4, "maxEntrants": 16},
        "matchLengths": [1], "clock": "blitz", "currency": "USD", "buyIn": "2500",
        "entryFee": "250", "prizeTable": "standard",
    })  # fmt: skip
    tid = str(created["tournamentId"])
    for taken, player in enumerate(people, start=1):
        player.page.get_by_role("link", name="Tournaments", exact=True).click()
        row = player.page.locator(f'tr[data-tournament="{tid}"]')
        expect(row.locator(".kind")).to_have_text("Scheduled")
        row.get_by_role("button", name="Register").click()
        expect(row.locator(".seats")).to_have_text(f"{taken}/16 (at least 4)")
    people[0].page.get_by_role("link", name="Account").click()
    people[0].expect_usd("22.50 USD", "27.50 USD")

    for player in people:
        player.page.get_by_role("link", name="Tournaments", exact=True).click()
        row = player.page.locator(f'tr[data-tournament="{tid}"]')
        deadline = time.monotonic() + 90
        while "cancelled" not in row.locator(".status").inner_text():
            assert time.monotonic() < deadline, row.locator(".status").inner_text()
            player.page.wait_for_timeout(500)
            player.page.get_by_role("button", name="Show tournaments").click()
        expect(row.locator(".status")).to_contain_text(
            "cancelled: 2 registered, below the minimum of 4")
        expect(row.get_by_role("button", name="Register")).to_have_count(0)
    shot(people[0].page, "scheduled-cancelled")
    for player in people:
        player.page.get_by_role("link", name="Account").click()
        player.expect_usd("50.00 USD", "0.00 USD", reload=True)
    assert fees_taken(dev_stack, tid) is None  # no fee ever reached the house
    audit = wallet_audit(dev_stack)
    assert audit.returncode == 0 and "audit ok" in audit.stdout, audit.stdout + audit.stderr
    for player in people:
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
        player.context.close()


def test_a_satellite_winner_enters_its_target_with_the_ticket_and_no_money_moves(
    dev_stack: DevRun, browser: Browser, tmp_path: Path  # noqa: F811
) -> None:
    tag = uuid.uuid4().hex[:6]
    target = create_tournament(dev_stack, tmp_path, f"Target {tag}", {
        "sitAndGo": {"seats": 4}, "matchLengths": [1], "clock": "blitz", "currency": "USD",
        "buyIn": "900", "entryFee": "100", "prizeTable": "standard",
    })  # fmt: skip
    target_id = str(target["tournamentId"])
    satellite = create_tournament(dev_stack, tmp_path, f"Satellite {tag}", {
        "sitAndGo": {"seats": 2}, "matchLengths": [1], "clock": "blitz", "currency": "USD",
        "buyIn": "500", "entryFee": "25", "prizeTable": "tickets",
        "targetTournamentId": target_id,
    })  # fmt: skip
    sid = str(satellite["tournamentId"])
    people = [Player(browser, dev_stack.gateway, who, n, phone=False)
              for who, n in zip(("kim", "lea"), random.sample(range(1, 0xFFFF), 2), strict=True)]
    register_and_deposit(people, "20.00")
    players = {account_id(p): p for p in people}
    for taken, player in enumerate(people, start=1):
        player.page.get_by_role("link", name="Tournaments", exact=True).click()
        row = player.page.locator(f'tr[data-tournament="{sid}"]')
        expect(row.locator(".kind")).to_have_text("Satellite")
        row.get_by_role("button", name="Register").click()
        expect(row.locator(".seats")).to_have_text(f"{taken}/2")

    finished = play_out(players, people[0], sid)
    champion, loser = finished["seating"]
    [ticket] = finished["tickets"]
    assert (ticket["accountId"], ticket["targetTournamentId"]) == (champion, target_id)
    assert ticket["value"] == {"currency": "USD", "minorUnits": "1000"}
    assert not ticket.get("used")
    assert not any("prize" in s for s in finished["standings"])  # tickets, not cash
    winner = players[champion]
    winner.page.get_by_role("link", name="Account").click()
    winner.expect_usd("14.75 USD", "10.00 USD", reload=True)  # the ticket, held at the target
    players[loser].page.get_by_role("link", name="Account").click()
    players[loser].expect_usd("14.75 USD", "0.00 USD", reload=True)

    # The satellite's page shows the ticket; it leads to the target, where it enters them.
    page = winner.page
    page.goto(f"{dev_stack.gateway}/#/tournament/{sid}")
    won = page.get_by_role("list", name="Tickets won").locator(f'li[data-account="{champion}"]')
    expect(won).to_have_text(
        f"{winner.name}: a ticket worth 10.00 USD to its target tournament (not used yet)")
    won.get_by_role("link", name="its target tournament").click()
    expect(page.get_by_role("heading", name=f"Target {tag}")).to_be_visible()
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".entrants")).to_have_text(winner.name)
    expect(page.locator(".status")).to_contain_text("seats 1/4")
    page.goto(f"{dev_stack.gateway}/#/tournament/{sid}")
    expect(won).to_have_text(
        f"{winner.name}: a ticket worth 10.00 USD to its target tournament (used)")
    entered = api_get(winner, f"/v1/tournaments/{target_id}")
    assert entered["entrants"] == [champion]
    [used] = api_get(winner, f"/v1/tournaments/{sid}")["tickets"]
    assert used["used"] is True
    shot(winner.page, "satellite-ticket-entered")
    winner.page.get_by_role("link", name="Account").click()
    winner.expect_usd("14.75 USD", "10.00 USD")  # entered by the ticket: nothing moved
    audit = wallet_audit(dev_stack)
    assert audit.returncode == 0 and "audit ok" in audit.stdout, audit.stdout + audit.stderr
    for player in people:
        assert player.outside == [], f"requests outside the gateway: {player.outside}"
        player.context.close()
