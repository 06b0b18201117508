"""Fail points: named places in the code where a test can make the process die on purpose.

A test facility, after FreeBSD's fail(9) and TiKV's fail-rs. "Survives a crash"
must be shown by SIGKILL at the worst moment, and the worst moment (a database
commit done, the Kafka offset or the outbox relay not yet) lasts microseconds:
a test cannot hit it by killing from outside. So the code names those moments
with :func:`failpoint`, and a test starts a real ``tavla serve`` process with
``TAVLA_FAILPOINTS`` arming some of them::

    TAVLA_FAILPOINTS="game.command.after_commit=6*off->kill"

Each entry is ``name=plan``, entries separated by ``;``. A plan is a chain of
terms ``[N*]action`` joined by ``->``: the first term applies to the first N
hits (for ever without ``N*``), then the next; when the chain is used up the
point is off. Actions: ``off`` (do nothing) and ``kill`` (SIGKILL this process:
no handler, no ``finally``, no flush, exactly as the kernel's OOM killer or a
node failure). The example lets six player commands through and kills the
process right after the seventh one's commit.

Off unless the variable is set, and then only for the names it arms: an
unarmed :func:`failpoint` is one dictionary truth test. ``tavla serve`` reads
the variable at start (:func:`configure`) and refuses an unknown name or a
malformed plan, naming the variable, and logs what it armed. Nothing in the
chart or ``tavla dev`` sets it.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

from services.kit.config import ConfigError

VARIABLE = "TAVLA_FAILPOINTS"

# Every fail point in the code, and the moment it names. A name not listed here
# cannot be armed (a typo in a test must not silently test nothing).
KNOWN: Mapping[str, str] = {
    "wallet.settlement.after_db_commit": (
        "the wallet's settlement consumer committed a batch of settlements to the "
        "database (inbox rows, ledger, Settled events in the outbox) and has not yet "
        "committed the batch's Kafka offsets"
    ),
    "wallet.accounts.after_db_commit": (
        "the wallet's accounts consumer committed a batch to the database and has not "
        "yet committed its Kafka offsets"
    ),
    "matchmaking.ratings.after_db_commit": (
        "matchmaking's ratings consumer committed a batch of rated results to the "
        "database (inbox rows, ratings, history, RatingChanged in the outbox) and has "
        "not yet committed the batch's Kafka offsets"
    ),
    "accounts.sanctions.after_db_commit": (
        "accounts applied a batch of anti-abuse sanctions (inbox rows, account status, "
        "blocklist, AccountTerminated in the outbox) and has not yet committed the "
        "batch's Kafka offsets"
    ),
    "antiabuse.facts.after_db_commit": (
        "the anti-abuse facts consumer committed a batch to the database (inbox rows, "
        "facts, alerts and pair verdicts in the outbox) and has not yet committed the "
        "batch's Kafka offsets"
    ),
    "matchmaking.seating.after_holds": (
        "matchmaking placed both stake holds for a seating attempt and has not yet "
        "asked the game service to create the game"
    ),
    "matchmaking.seating.after_game": (
        "the game service created the game for a seating attempt and matchmaking has "
        "not yet recorded the table as playing"
    ),
    "game.settlement.awaiting_analysis": (
        "the game's reconnect timer found the analysis service unreachable and committed "
        "the settlement's next try (its timer row): a settlement is waiting on analysis"
    ),
    "tournaments.matches.after_db_commit": (
        "the tournaments' results consumer committed a batch of match results (inbox rows, "
        "brackets, MatchDecided in the outbox) and has not yet committed the batch's Kafka "
        "offsets, nor created the next round's games"
    ),
    "tournaments.tickets.after_settle": (
        "the tournaments' driver had the wallet settle a satellite's pool as tickets and "
        "cash (SettlePool, keyed by the satellite) and has not yet recorded the tickets "
        "and the finish"
    ),
    "game.command.after_commit": (
        "a player's command (roll, move, cube, resign...) was committed with its "
        "action-log row and outbox events; the relay has not been woken for them and "
        "the caller has no answer"
    ),
}

ACTIONS = ("off", "kill")


@dataclass
class Plan:
    """What an armed point does on each hit: ``terms`` of (hits or None for ever, action)."""

    terms: list[tuple[int | None, str]]
    hits: int = field(default=0)

    def next_action(self) -> str:
        self.hits += 1
        seen = 0
        for count, action in self.terms:
            if count is None or self.hits <= seen + count:
                return action
            seen += count
        return "off"


_armed: dict[str, Plan] = {}


def failpoint(name: str) -> None:
    """Do what ``TAVLA_FAILPOINTS`` says for ``name`` at this hit: usually nothing."""
    if not _armed:
        return
    plan = _armed.get(name)
    if plan is None:
        return
    if plan.next_action() == "kill":
        # Written straight to stderr: logging may buffer, and nothing runs after this.
        sys.stderr.write(f"failpoint {name}: SIGKILL (hit {plan.hits})\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


def parse(text: str) -> dict[str, Plan]:
    """``TAVLA_FAILPOINTS``'s value as plans by name; ConfigError names what is wrong."""
    plans: dict[str, Plan] = {}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        name, equals, plan = (piece.strip() for piece in entry.partition("="))
        if not equals or not plan:
            raise ConfigError(f"{VARIABLE}: {entry!r} is not name=plan (e.g. {name}=kill)")
        if name not in KNOWN:
            raise ConfigError(
                f"{VARIABLE}: no fail point named {name!r}; known: {', '.join(sorted(KNOWN))}"
            )
        plans[name] = Plan([_term(term.strip(), name) for term in plan.split("->")])
    return plans


def _term(term: str, name: str) -> tuple[int | None, str]:
    count_text, star, action = term.rpartition("*")
    count: int | None = None
    if star:
        if not count_text.isdigit() or int(count_text) < 1:
            raise ConfigError(f"{VARIABLE}: {name}: {term!r} needs a positive count before '*'")
        count = int(count_text)
    if action not in ACTIONS:
        raise ConfigError(
            f"{VARIABLE}: {name}: unknown action {action!r}; expected one of {', '.join(ACTIONS)}"
        )
    return count, action


def configure(environ: Mapping[str, str] | None = None) -> list[str]:
    """Arm the points ``TAVLA_FAILPOINTS`` names (disarm all when unset); returns their names."""
    plans = parse((os.environ if environ is None else environ).get(VARIABLE, ""))
    _armed.clear()
    _armed.update(plans)
    return sorted(plans)
