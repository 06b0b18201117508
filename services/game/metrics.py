"""Game-service metrics for operators, served on the kit's /metrics endpoint."""

from __future__ import annotations

from functools import cache
from typing import Any

from prometheus_client import Counter, Histogram

from services.game.domain import Transition

COMMANDS = Counter("tavla_game_commands", "Applied game commands, by action.", ["action"])
TIMERS_FIRED = Counter(
    "tavla_game_timers_fired", "Clock and reconnect timers that changed a game.", ["kind"]
)
WRITE_BATCH = Histogram(
    "tavla_game_write_batch_size",
    "Commands written by one group-commit statement.",
    buckets=(1, 2, 4, 8, 16, 32, 64),
)
FACTS = Counter("tavla_game_events", "Game events recorded in the outbox, by type.", ["type"])


def count(action: str, transition: Transition) -> None:
    """One applied command and the events it recorded (GameEnded, PlayerDisconnected ...)."""
    _command_series(action).inc()
    for fact in transition.facts:
        _fact_series(fact.DESCRIPTOR.name).inc()


# A series looked up by label once (``labels`` takes a lock and builds a key on every
# call: about a tenth of a command's own counting work was that). Both label sets are
# closed: the actions and the event types.
@cache
def _command_series(action: str) -> Any:
    return COMMANDS.labels(action)


@cache
def _fact_series(event_type: str) -> Any:
    return FACTS.labels(event_type)
