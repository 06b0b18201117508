"""Playing one game to the end through the gateway: the server rolls, the demo chooses plays.

The game service lists the legal plays of every roll (``legalPlays``); the demo
picks one of them, preferring plays that bear checkers off and then plays that
hit nothing (fewer checkers sent back: a shorter game), never a play of its own
invention. It never doubles, so the cube stays at 1 (a double it is offered it
takes). While one player decides, the other heart-beats, as an app that stays open does,
so neither counts as disconnected however slowly the machine runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from services.kit.devstack.demo.gateway import Gateway, Player, StepFailed

MAX_ACTIONS = 3000
HEARTBEAT_SECONDS = 2.0


def choose(legal_plays: list[dict[str, Any]]) -> str:
    """A legal play's notation: most checkers borne off, then fewest hits, then listed first."""
    def score(play: dict[str, Any]) -> tuple[int, int]:
        notation = str(play["notation"])
        return notation.count("off"), -notation.count("*")

    return str(max(legal_plays, key=score)["notation"])


def play_to_the_end(gateway: Gateway, game_id: str, players: list[Player],
                    say: Callable[[str], None], timeout: float = 600.0) -> dict[str, Any]:
    """Both players act until the game is finished; the final view."""
    by_id = {p.account_id: p for p in players}
    path = f"/v1/games/{game_id}"
    view = gateway.ok("GET", path, headers=players[0].headers)
    beats = {p.account_id: time.monotonic() for p in players}
    deadline = time.monotonic() + timeout
    for _ in range(MAX_ACTIONS):
        if view["status"] != "GAME_STATUS_IN_PROGRESS":
            return view
        if time.monotonic() > deadline:
            raise StepFailed(f"the game was not over after {timeout:.0f} s")
        actor = by_id[view["awaitingAccountId"]]
        for other in players:
            quiet = time.monotonic() - beats[other.account_id]
            if other is not actor and quiet > HEARTBEAT_SECONDS:
                gateway.ok("POST", f"{path}:heartbeat", {}, other.headers)
                beats[other.account_id] = time.monotonic()
        view = _act(gateway, path, view, actor, say)
        beats[actor.account_id] = time.monotonic()
    raise StepFailed(f"the game was not over after {MAX_ACTIONS} actions")


def _act(gateway: Gateway, path: str, view: dict[str, Any], actor: Player,
         say: Callable[[str], None]) -> dict[str, Any]:
    version = {"expectedVersion": view["version"]}
    phase = view["phase"]
    if phase == "TURN_PHASE_ROLL_OR_DOUBLE":
        rolled = gateway.ok("POST", f"{path}:roll", version, actor.headers)
        if rolled["phase"] != "TURN_PHASE_MOVE" and rolled["status"] == view["status"]:
            say(f"{actor.name} rolled and has no legal play: the turn passes")
        return rolled
    if phase == "TURN_PHASE_MOVE":
        notation = choose(view["legalPlays"])
        dice = "-".join(str(d) for d in view.get("dice", []))
        say(f"{actor.name} rolled {dice} and plays {notation}")
        return gateway.ok("POST", f"{path}:move", {**version, "notation": notation},
                          actor.headers)
    if phase == "TURN_PHASE_CUBE_RESPONSE":
        return gateway.ok("POST", f"{path}:take", version, actor.headers)
    if phase == "TURN_PHASE_RESIGN_RESPONSE":
        return gateway.ok("POST", f"{path}:rejectResign", version, actor.headers)
    raise StepFailed(f"the game is in phase {phase}, which the demo does not expect")
