"""Timeouts and resignations, valued where play stopped, through the real anti-abuse
service on the real PostgreSQL and broker (the game's ``GameEnded`` and ``StopValued``
and the wallet's ``Settled`` built with their protos, in the order they publish them):

- a player who lets the clock run out in losing positions, again and again, is a
  DELIBERATE_DISCONNECT alert, the timeouts counted with their disconnections; an honest
  player who ran out of time nine times, four of them while losing, is not;
- a giver who resigns to the receiver in good positions corroborates the pair's one-way
  flow: chip dumping at HIGH, the resignations as evidence; a loser who resigns lost
  positions to a stronger player ten times is the flow alone (MEDIUM: 1/1024 by fair
  play between equals).

Figures by hand beside each assertion.
"""

from __future__ import annotations

from typing import Any

import pytest

from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.integration.antiabuse.test_detectors import alerts_about, wait_for_alert
from tests.support import antiabuse as support
from tests.support.kafka import publish
from tests.support.play_events import PLAY_TOPICS, abandoned, new_id, under_new_ids
from tests.support.services import (
    RunningService,
)
from tests.support.stop_events import RESIGNED, TIMEOUT, stopped

DISCONNECT = antiabuse_events.ALERT_KIND_DELIBERATE_DISCONNECT
DUMPING = antiabuse_events.ALERT_KIND_CHIP_DUMPING
MEDIUM, HIGH = antiabuse_events.SEVERITY_MEDIUM, antiabuse_events.SEVERITY_HIGH


async def test_running_out_the_clock_when_losing_again_and_again_is_flagged(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    runner, honest = new_id(), new_id()
    timeouts = [new_id() for _ in range(4)]
    dropped = new_id()
    events = [
        e
        for game_id, share in zip(timeouts, ("0.3000", "0.3500", "0.2000", "0.2500"), strict=True)
        for e in stopped(game_id, runner, new_id(), TIMEOUT, share)
    ]
    events += abandoned(dropped, runner, new_id(), "0.1000")  # and one disconnection
    # A timeout the game could not have analysed (the even split) says nothing.
    events += stopped(new_id(), runner, new_id(), TIMEOUT, "0.5000", analysed=False)
    # The honest player ran out of time 9 times, 4 of them at a share <= 0.4.
    shares = ("0.3000", "0.7000", "0.5500", "0.4000", "0.6000", "0.2000", "0.9000", "0.3900")
    for share in (*shares, "0.5000"):
        events += stopped(new_id(), honest, new_id(), TIMEOUT, share)
    await publish(bootstrap, events)

    alert = await wait_for_alert(stub, runner, [runner], MEDIUM)
    assert alert.kind == DISCONNECT and alert.detector == "deliberate_disconnect"
    (evidence,) = alert.evidence
    assert sorted(evidence.game_ids) == sorted([*timeouts, dropped])
    # Five stops (four timeouts, one disconnection), all losing: 0.35^5 = 0.00525.
    assert alert.score == pytest.approx(0.00525)
    assert (evidence.details["abandoned"], evidence.details["losing"]) == ("5", "5")
    assert evidence.details["losing_timeouts"] == "4"
    await publish(bootstrap, events + under_new_ids(events))  # replays: nothing new
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    assert [x.alert_id for x in await alerts_about(stub, runner)] == [alert.alert_id]
    # The honest player: k = 4 of n = 9 at base rate 0.35, P(X >= 4) = 1 - (0.020712 +
    # 0.100373 + 0.216188 + 0.271620) = 0.391 > 0.01: chance explains it.
    assert await alerts_about(stub, honest) == []


async def test_resigning_good_positions_to_the_receiver_corroborates_chip_dumping(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver, weak, strong = (new_id() for _ in range(4))
    events, settlements, good = [], [], []
    # The giver's share where they resigned: three good (>= 0.55: money E >= +0.3), one lost.
    for share in ("0.7000", "0.6200", "0.5500", "0.3000"):
        game_id = new_id()
        events += stopped(game_id, giver, receiver, RESIGNED, share)
        settlements.append(support.settled(game_id, receiver, giver, 1500))
        if float(share) >= 0.55:
            good.append(game_id)
    # A weak player resigning lost positions to a strong one (0.5400: just short of good),
    # ten times: the flow alone is significant (1/1024), their resignations say nothing.
    for share in ("0.2000", "0.1000", "0.3000", "0.5400", *["0.1500"] * 6):
        game_id = new_id()
        events += stopped(game_id, weak, strong, RESIGNED, share)
        settlements.append(support.settled(game_id, strong, weak, 1500))
    # The ends and their valuations first, then the money (as the wallet settles after
    # the GameEnded): the flow's finding is made once, every resignation known.
    await publish(bootstrap, events)
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    await publish(bootstrap, settlements)

    # 4 games, 60.00 one way: nothing by chance alone (1/16), HIGH with three resignations
    # in good positions (two or more of the giver's losses to the receiver show a sign).
    alert = await wait_for_alert(stub, giver, sorted([giver, receiver]), HIGH)
    assert alert.kind == DUMPING
    kinds = {e.kind: e for e in alert.evidence}
    resigned = kinds["resigned_in_good_position"]
    assert sorted(resigned.game_ids) == sorted(good)
    assert sorted(resigned.details["shares"].split(",")) == ["0.5500", "0.6200", "0.7000"]

    flow_only = await wait_for_alert(stub, weak, sorted([weak, strong]), MEDIUM)
    assert [e.kind for e in flow_only.evidence] == ["one_directional_flow"]
    await support.all_consumed(bootstrap, PLAY_TOPICS)
    assert [(x.kind, x.severity) for x in await alerts_about(stub, weak)] == [(DUMPING, MEDIUM)]
