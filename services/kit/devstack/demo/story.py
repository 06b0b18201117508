"""The steps of ``tavla demo``, each printed as it runs; the first failure ends the run.

A :class:`Story` carries what the steps share (the gateway, the broker, the
players, the game). Each step is a function of it; :func:`run` prints the step,
its details as they happen, and ``ok`` or ``FAILED`` with the reason.
"""

from __future__ import annotations

import random
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from services.kit.devstack.demo import schedule
from services.kit.devstack.demo.compliance import ALERTS_TOPIC, wait_for_alert
from services.kit.devstack.demo.gateway import (
    Gateway,
    Player,
    StepFailed,
    balance,
    register,
    until,
)
from services.kit.devstack.demo.play import play_to_the_end

STAKE = 500  # $5 a point: a money game holds 3 x $5 from each player while it runs
FUNDS = 5_000
DUMP_STAKE = 1_000  # the chip-dumping pair plays for $10 a game
# Anti-abuse's flow alone: strangers' losses fair play would produce at most 1 time in
# 1000 (10 straight: 1/1024), and at least $20 net.
DUMP_GAMES = 10
NO_XFF = ("the gateway placed the demo's calls nowhere (location_unplaced): it does not "
          "believe X-Forwarded-For. Start the stack with TAVLA_DEV_XFF_TRUSTED_HOPS=1 "
          "(e.g. `TAVLA_DEV_XFF_TRUSTED_HOPS=1 make run`)")


def say(text: str) -> None:
    print(f"    {text}", flush=True)


@dataclass
class Story:
    gateway: Gateway
    bootstrap: str
    players: list[Player] = field(default_factory=list)
    game_id: str = ""
    final: dict[str, Any] = field(default_factory=dict)
    _used: set[int] = field(default_factory=set)

    def malta(self) -> str:
        """A Malta address in a /64 of its own: strangers are not linked by an address."""
        from services.geo.devdata import malta_address  # the local extra, as tavla dev

        while (n := random.randint(1, 0xFFFF)) in self._used:
            pass
        self._used.add(n)
        return malta_address(n)


def money_rules(stake: int) -> dict[str, Any]:
    return {"kind": "PLAY_KIND_MONEY_GAME",
            "stake": {"minorUnits": str(stake), "currency": "USD"}}


def deposit(story: Story, player: Player, amount: int) -> None:
    reply = story.gateway.call("POST", "/v1/wallet/deposits", {
        "amount": {"minorUnits": str(amount), "currency": "USD"},
        "idempotencyKey": uuid.uuid4().hex, "paymentMethod": "sandbox",
    }, player.headers)
    if reply.status != 200:
        if "location_unplaced" in reply.message:
            raise StepFailed(NO_XFF)
        raise StepFailed(f"{player.name}'s deposit: {reply.status} {reply.message}")


def check_gateway(story: Story) -> None:
    reply = story.gateway.call("GET", "/healthz")
    if reply.status != 200:
        raise StepFailed(f"GET /healthz answered {reply.status}: is `tavla dev` ready?")
    say(f"gateway {story.gateway.base_url} (healthz 200), broker {story.bootstrap}")


def two_players_register(story: Story) -> None:
    for name in ("ann", "bob"):
        player = register(story.gateway, name, "MT", story.malta())
        story.players.append(player)
        say(f"{player.name}: account {player.account_id}, resident of Malta, "
            f"calling from {player.address}, logged in")


def they_top_up(story: Story) -> None:
    for player in story.players:
        deposit(story, player, FUNDS)
        say(f"{player.name} deposits {schedule.dollars(FUNDS)} with the sandbox provider")
    for player in story.players:
        until(lambda p=player: balance(story.gateway, p) == (FUNDS, 0),  # type: ignore[misc]
              f"{player.name}'s deposit landing")
        say(f"{player.name}: {schedule.dollars(FUNDS)} available")


def they_meet(story: Story) -> None:
    tickets: dict[str, str] = {}
    try:
        for player in story.players:
            ticket = story.gateway.ok("POST", "/v1/queue", {
                "rules": money_rules(STAKE), "idempotencyKey": uuid.uuid4().hex,
            }, player.headers)
            tickets[player.account_id] = ticket["ticketId"]
            say(f"{player.name} enters the queue for a {schedule.dollars(STAKE)} money game")
        matched = {p.account_id: _matched(story, p, tickets[p.account_id]) for p in story.players}
    finally:
        for player in story.players:  # a ticket still waiting is not left behind
            if player.account_id in tickets:
                story.gateway.call("DELETE", f"/v1/queue/{tickets[player.account_id]}",
                                   headers=player.headers)
    ann, bob = story.players
    if matched[ann.account_id]["opponentAccountId"] != bob.account_id:
        raise StepFailed("ann was paired with someone else's waiting ticket: "
                         f"{matched[ann.account_id]['opponentAccountId']}")
    story.game_id = matched[ann.account_id]["gameId"]
    quote = matched[ann.account_id].get("commission", {})
    say(f"matched: game {story.game_id}; the wallet quotes {quote.get('rate', '?')} per player "
        "at cube 1")
    for player in story.players:
        held = balance(story.gateway, player)
        if held != (FUNDS - 3 * STAKE, 3 * STAKE):
            raise StepFailed(f"{player.name}'s stake hold: (available, held) = {held}")
        say(f"{player.name}: {schedule.dollars(3 * STAKE)} held for the game")


def _matched(story: Story, player: Player, ticket_id: str) -> dict[str, Any]:
    def seen() -> dict[str, Any] | None:
        ticket = story.gateway.ok("GET", f"/v1/queue/{ticket_id}", headers=player.headers)
        if ticket["status"] in ("TICKET_STATUS_REFUSED", "TICKET_STATUS_CANCELLED"):
            raise StepFailed(f"{player.name}'s ticket: {ticket['status']} {ticket.get('reason')}")
        return ticket if ticket["status"] == "TICKET_STATUS_MATCHED" else None

    return until(seen, f"{player.name}'s ticket matched")


def they_play(story: Story) -> None:
    final = play_to_the_end(story.gateway, story.game_id, story.players, say)
    outcome = final.get("lastOutcome", {})
    if final["status"] != "GAME_STATUS_FINISHED" or not final.get("winnerAccountId"):
        raise StepFailed(f"the game ended as {final['status']} with {outcome}")
    winner = _by_id(story, final["winnerAccountId"])
    say(f"{winner.name} wins: {outcome.get('result')} at cube {outcome.get('cubeValue')} "
        f"({outcome.get('reason')})")
    story.final = final


def _by_id(story: Story, account_id: str) -> Player:
    return next(p for p in story.players if p.account_id == account_id)


def they_are_settled(story: Story) -> None:
    outcome = story.final["lastOutcome"]
    ratings = tuple(float(p["rating"]) for p in story.final["players"])
    figures = schedule.money_game(STAKE, int(outcome["cubeValue"]), outcome["result"],
                                  (ratings[0], ratings[1]))
    for line in figures.lines:
        say(line)
    winner = _by_id(story, story.final["winnerAccountId"])
    loser = next(p for p in story.players if p is not winner)
    expected = {winner.account_id: (FUNDS + figures.winner_credit, 0),
                loser.account_id: (FUNDS - figures.loser_debit, 0)}

    def settled() -> bool:
        return all(balance(story.gateway, p) == expected[p.account_id] for p in story.players)

    try:
        until(settled, "both balances settled")
    except StepFailed:
        actual = {p.name: balance(story.gateway, p) for p in story.players}
        raise StepFailed(
            f"expected (available, held) {expected}, the wallet shows {actual}") from None
    for player in (winner, loser):
        say(f"{player.name}: {schedule.dollars(expected[player.account_id][0])} available, "
            "nothing held")


def they_see_their_analysis(story: Story) -> None:
    for player in story.players:
        def analysed(p: Player = player) -> dict[str, Any] | None:
            reply = story.gateway.call("GET", f"/v1/games/{story.game_id}/analysis",
                                       headers=p.headers)
            return reply.body if reply.status == 200 else None

        analysis = until(analysed, f"{player.name}'s match analysis", timeout=120)
        mine = next((a for a in analysis.get("players", [])
                     if a.get("accountId") == player.account_id), None)
        if mine is None or not mine.get("checkerDecisions"):
            raise StepFailed(f"{player.name}'s analysis has no figures of theirs: {analysis}")
        say(f"{player.name}: PR {float(mine.get('performanceRating', 0)):.1f} over "
            f"{mine.get('checkerDecisions')} checker plays, "
            f"{mine.get('doubtful', 0)} doubtful / {mine.get('bad', 0)} bad / "
            f"{mine.get('veryBad', 0)} very bad, luck {float(mine.get('luck', 0)):+.3f}")


def florida_is_refused(story: Story) -> None:
    from services.geo.devdata import FLORIDA_IP

    player = register(story.gateway, "flo", "US-FL", FLORIDA_IP)
    say(f"{player.name}: resident of Florida (US-FL), calling from {FLORIDA_IP}, which the dev "
        "geo databases place in Florida; registered and logged in (play money is allowed)")
    story.gateway.ok("POST", "/v1/wallet/play-money:topUp",
                     {"idempotencyKey": uuid.uuid4().hex}, player.headers)
    say(f"{player.name} tops up play money: accepted")
    reply = story.gateway.call("POST", "/v1/wallet/deposits", {
        "amount": {"minorUnits": "2000", "currency": "USD"},
        "idempotencyKey": uuid.uuid4().hex, "paymentMethod": "sandbox",
    }, player.headers)
    if reply.status == 200:
        raise StepFailed("a Florida player's real-money deposit was accepted")
    if "location_unplaced" in reply.message:
        raise StepFailed(NO_XFF)
    if "location_restricted" not in reply.message:
        raise StepFailed(f"refused, but not for Florida's rule: {reply.status} {reply.message}")
    say(f"{player.name} deposits $20.00: refused, {reply.status}: {reply.message}")
    left = balance(story.gateway, player)
    if left != (0, 0):
        raise StepFailed(f"the refused deposit left a USD balance: {left}")
    say(f"{player.name}: no USD balance, nothing recorded")


def chip_dumping_is_flagged(story: Story) -> None:
    giver = register(story.gateway, "cat", "MT", story.malta())
    taker = register(story.gateway, "dan", "MT", story.malta())
    pair = [giver, taker]
    say(f"{giver.name} ({giver.account_id}) will lose {DUMP_GAMES} games on purpose to "
        f"{taker.name} ({taker.account_id}), {schedule.dollars(DUMP_STAKE)} a game")
    funds = {giver.account_id: DUMP_GAMES * DUMP_STAKE + 2_000, taker.account_id: 5_000}
    for player in pair:
        deposit(story, player, funds[player.account_id])
    for player in pair:
        until(lambda p=player: balance(story.gateway, p)  # type: ignore[misc]
              == (funds[p.account_id], 0), f"{player.name}'s deposit landing")
    expected = dict(funds)
    for number in range(1, DUMP_GAMES + 1):
        game = _dump_one_game(story, giver, taker, number)
        ratings = tuple(float(p["rating"]) for p in game["players"])
        figures = schedule.money_game(DUMP_STAKE, 1, "RESULT_TYPE_SINGLE",
                                      (ratings[0], ratings[1]))
        expected[giver.account_id] -= figures.loser_debit
        expected[taker.account_id] += figures.winner_credit
        until(lambda: all(balance(story.gateway, p) == (expected[p.account_id], 0)
                          for p in pair), f"game {number} settled")
        say(f"game {number}: {giver.name} resigned at once; "
            f"{schedule.dollars(figures.loser_debit)} from {giver.name}, "
            f"{schedule.dollars(figures.winner_credit)} to {taker.name}")
    subjects = {giver.account_id, taker.account_id}

    def chip_dumping(event: dict[str, Any]) -> bool:
        return (event.get("detector") == "chip_dumping"
                and set(event.get("subject_account_ids", [])) == subjects)

    say(f"reading {ALERTS_TOPIC} on {story.bootstrap} for the pair")
    line = wait_for_alert(story.bootstrap, chip_dumping)
    if line is None:
        raise StepFailed(f"no chip_dumping alert for the pair on {ALERTS_TOPIC} within 120 s")
    alert = line["event"]
    say(f"alert {alert.get('alert_id')}: {alert.get('kind')}, {alert.get('severity')}, "
        f"score {alert.get('score')} ({alert.get('score_meaning')})")
    for evidence in alert.get("evidence", []):
        say(f"evidence {evidence.get('kind', '')}: {evidence.get('description', evidence)}")


def _dump_one_game(story: Story, giver: Player, taker: Player, number: int) -> dict[str, Any]:
    """A private table of the taker's, the giver sits, resigns at once, the taker accepts."""
    table = story.gateway.ok("POST", "/v1/tables", {
        "rules": money_rules(DUMP_STAKE), "idempotencyKey": uuid.uuid4().hex,
        "invitedAccountId": giver.account_id,
    }, taker.headers)
    joined = story.gateway.ok("POST", f"/v1/tables/{table['tableId']}:join",
                              {"idempotencyKey": uuid.uuid4().hex}, giver.headers)
    game_id = joined.get("gameId")
    if not game_id:
        raise StepFailed(f"game {number}: the table did not start a game: {joined}")
    path = f"/v1/games/{game_id}"
    view = story.gateway.ok("GET", path, headers=giver.headers)
    offered = story.gateway.ok("POST", f"{path}:resign", {
        "expectedVersion": view["version"], "level": "RESULT_TYPE_SINGLE"}, giver.headers)
    return story.gateway.ok("POST", f"{path}:acceptResign",
                            {"expectedVersion": offered["version"]}, taker.headers)


STEPS: tuple[tuple[str, Callable[[Story], None]], ...] = (
    ("the dev stack answers at the gateway", check_gateway),
    ("two players register and log in from Malta", two_players_register),
    ("they top up their wallets with sandbox dollars", they_top_up),
    ("they meet in the auto-match queue", they_meet),
    ("they play a real-money game to the end", they_play),
    ("the wallet settles them by the commission schedule, to the cent", they_are_settled),
    ("they see their match analysis", they_see_their_analysis),
    ("a Florida player is refused real money", florida_is_refused),
    ("a chip-dumping pair is flagged on the compliance stream", chip_dumping_is_flagged),
)


def run(story: Story) -> int:
    """Every step in order; 0 when all passed, 1 at the first failure (named)."""
    started = time.monotonic()
    for number, (title, step) in enumerate(STEPS, 1):
        print(f"[demo] step {number}/{len(STEPS)}: {title}", flush=True)
        began = time.monotonic()
        try:
            step(story)
        except StepFailed as failure:
            print(f"[demo] FAILED step {number}/{len(STEPS)}: {title}: {failure}", flush=True)
            return 1
        except Exception as error:  # a bug or an answer of an unexpected shape: still named
            print(f"[demo] FAILED step {number}/{len(STEPS)}: {title}: "
                  f"{type(error).__name__}: {error}", flush=True)
            return 1
        print(f"[demo] ok: {title} ({time.monotonic() - began:.1f}s)", flush=True)
    print(f"[demo] all {len(STEPS)} steps passed ({time.monotonic() - started:.1f}s)",
          flush=True)
    sys.stdout.flush()
    return 0
