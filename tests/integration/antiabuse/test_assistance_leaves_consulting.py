"""Assistance leaves a person's play beside their own other account to consulting, through
the real anti-abuse service, PostgreSQL and broker.

One person with two accounts on one device (a strong link): the helped account plays three
sessions as a gap-blind chooser (the second best 15 % of the time whatever it costs, 200
choices a session: hand-worked in tests/unit/antiabuse/test_assistance.py, MEDIUM from one
session's choices, HIGH from two) while the other account sits at another table; at one of
them the other account's game is still running when the helped account's analysis
arrives (left in, that session alone would be MEDIUM). Those games are consulting's: no
assistance alert. A stranger (own device, nothing shared with the account at the other
table) playing exactly the same is HIGH: the same choices are assistance when no account
of the same person was seated elsewhere. (That the account's other games are still
judged: the unit tests.)
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from services.kit.events.envelope import Envelope
from tavla.analysis.v1 import analysis_pb2
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tests.integration.antiabuse.test_play_detectors import (
    BOT,
    GAME,
    alerts_now,
    alerts_of,
    analysed,
    new_id,
    ranked_session,
    window,
)
from tests.support import antiabuse as support
from tests.support.kafka import publish
from tests.support.services import RunningService

ALERTS = "tavla.compliance.alerts.v1"


def started_only(game_id: str, accounts: list[str], start: datetime) -> Envelope:
    """A game the game service has announced started and not yet ended (still running)."""
    started = game_events.GameStarted(
        game_id=game_id,
        table_id=new_id(),
        game_number=1,
        players=[game_pb2.Player(account_id=a) for a in accounts],
    )
    started.occurred_at.FromDatetime(start)
    return support.envelope(GAME, game_id, started, "game")


async def test_play_beside_ones_own_other_account_is_consultings_not_assistances(
    antiabuse: RunningService, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    helped, helper = new_id(), new_id()
    stranger, stranger_other = new_id(), new_id()
    await publish(
        bootstrap,
        [
            # One person's two accounts, made at one computer together.
            *support.one_persons_accounts(helped, helper),
            support.logged_in(stranger, f"dev-{uuid.uuid4().hex[:8]}",
                              f"{support.fresh_network()}.12"),
            support.logged_in(stranger_other, f"dev-{uuid.uuid4().hex[:8]}",
                              f"{support.fresh_network()}.13"),
        ],
    )
    now = datetime.now(UTC)
    rng = random.Random(20)
    game_facts: list[Envelope] = []
    beside: list[Envelope] = []
    for account, other in ((helped, helper), (stranger, stranger_other)):
        for hours in (5, 3, 0):  # gap-blind, the other account at another table
            game_id, start = new_id(), now - timedelta(hours=hours, minutes=40)
            game_facts += window(game_id, [account, new_id()], start, 35)
            beside.append(analysed(game_id, [analysis_pb2.PlayerAnalysis(
                account_id=account, decision_list=ranked_session(rng, 15, 15))]))
            theirs, their_start = new_id(), start + timedelta(minutes=10)
            if hours:
                game_facts += window(theirs, [other, new_id()], their_start, 40)
            else:  # still running when the analysis arrives
                game_facts.append(started_only(theirs, [other, new_id()], their_start))
    await publish(bootstrap, game_facts)
    await support.all_consumed(bootstrap, [GAME, "tavla.accounts.v1"])
    await publish(bootstrap, beside)

    published = await support.read_topic(
        bootstrap, ALERTS, alerts_of(BOT, {stranger}),
        lambda got: any(a.severity == antiabuse_events.SEVERITY_HIGH for a in got))
    alert = published[-1]
    assert isinstance(alert, antiabuse_events.ComplianceAlert)
    evidence = {e.kind: e for e in alert.evidence}
    assert "decisions_left_to_consulting" not in evidence["engine_closeness"].details
    assert await alerts_now(antiabuse, bootstrap, BOT, {helped, helper}) == []
