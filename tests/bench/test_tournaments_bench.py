"""`tavla bench tournaments`, short: a scheduled knockout of 16 players.

The command starts its own stack (PostgreSQL, the broker, accounts, geo, wallet, game and
tournaments), funds and registers 16 players, plays the 15 matches to their end through
the game service (about 110 game calls a match: a few minutes on a busy machine) and checks
the event. Asserted from its JSON line: every field, the bracket (15
matches over 4 rounds, every match decided once, one champion), the payout by the
published table to the cent, and the wallet's clean audit. The CPU figures are printed,
not asserted: on a shared machine they say as much about the neighbours.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from services.tournaments.bench import CallSlots, PacedGames, expected_prizes
from tavla.tournaments.v1 import tournaments_pb2

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"players", "matches", "rounds", "wall_s", "bracket_ok", "payout_ok", "audit"}
CPU = {"tournaments_s", "game_s", "tournaments_s_per_match", "game_s_per_match", "ratio"}


def _match(
    match_id: str, number: int, players: tuple[str, str], winner: str
) -> tournaments_pb2.Match:
    return tournaments_pb2.Match(
        match_id=match_id, round=number, players=players, winner_account_id=winner,
        state=tournaments_pb2.MATCH_STATE_FINISHED, decision="played",
    )  # fmt: skip


def test_the_checks_prizes_are_the_published_table_worked_by_hand() -> None:
    """4 entrants, pool 4 x 10.01 = 40.04 at 70/30 (the 4-slot row): 28.028 -> 28.02 and
    12.012 -> 12.01, one cent left over to the champion: 28.03 and 12.01, 0 for the
    semi-final losers."""
    bracket = [
        _match("r1m1", 1, ("a", "b"), "a"),
        _match("r1m2", 1, ("c", "d"), "d"),
        _match("r2m1", 2, ("a", "d"), "d"),
    ]
    prizes = expected_prizes(bracket, ["a", "b", "c", "d"], 4_004)
    assert prizes == {"d": 2_803, "a": 1_201, "b": 0, "c": 0}


class _SlowGame:
    """A game stub whose unary calls wait until the test lets them finish."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.release = asyncio.Event()

    def __getattr__(self, method: str) -> object:
        async def call(request: str, **kwargs: object) -> str:
            self.sent.append(request)
            await self.release.wait()
            return request

        return call

    def WatchGame(self, request: str, **kwargs: object) -> str:
        return f"stream {request}"


async def test_the_players_calls_wait_for_a_slot_decisions_before_heartbeats() -> None:
    game = _SlowGame()
    paced = PacedGames(game, CallSlots(2))
    first = [asyncio.create_task(paced.Roll(f"roll {n}")) for n in range(2)]
    await asyncio.sleep(0.01)
    queued = [
        asyncio.create_task(paced.Heartbeat("beat")),
        asyncio.create_task(paced.Move("move")),
        asyncio.create_task(paced.PostChatMessage("chat")),
        asyncio.create_task(paced.Double("double")),
    ]
    await asyncio.sleep(0.01)
    assert game.sent == ["roll 0", "roll 1"]  # two in flight, four waiting on the client
    assert paced.WatchGame("g") == "stream g"  # a stream is never held back
    cancelled = asyncio.create_task(paced.Take("take"))
    await asyncio.sleep(0.01)
    cancelled.cancel()  # a call given up while waiting takes no slot
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    game.release.set()
    assert await asyncio.gather(*first, *queued) == [
        "roll 0", "roll 1", "beat", "move", "chat", "double"
    ]
    # The decisions (and the chat line said between them) in the order they came, then
    # the heartbeat.
    assert game.sent == ["roll 0", "roll 1", "move", "chat", "double", "beat"]


@pytest.mark.timeout(900)
def test_sixteen_players_settle_by_the_table_with_a_clean_audit() -> None:
    command = [sys.executable, "-m", "services.cli", "bench", "tournaments", "--players", "16"]
    run = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=880, check=False
    )
    assert run.stdout.strip(), run.stderr[-4000:]
    line = run.stdout.strip().splitlines()[-1]
    print("\n" + line)
    result = json.loads(line)
    assert set(result) >= FIELDS | {"cpu"}
    assert set(result["cpu"]) >= CPU
    assert result["players"] == result["registered"] == 16
    assert (result["matches"], result["rounds"]) == (15, 4)
    assert result["bracket_ok"], result["bracket_faults"]
    assert result["payout_ok"] is True
    assert result["audit"] == "ok"
    assert result["errors"] == 0, result["first_error"]
    assert run.returncode == 0, run.stderr[-4000:]
