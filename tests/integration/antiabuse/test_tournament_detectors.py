"""The tournament detectors on the real PostgreSQL and broker, through the real anti-abuse
service, fed tournament matches as the tournaments service publishes them
(``MatchDecided`` on ``tavla.tournaments.v1``, signed as its outbox relay signs) with the
game's ``MatchEnded`` and the analysis service's ``MatchAnalysed`` of each played match:

- a player who loses a tournament match to their partner at 0.10 per decision against
  0.02 in their wins is soft play (RATING_MANIPULATION, the pair) at LOW, HIGH when
  they do it again in a second tournament; an honest player's ordinary loss (0.03) in a
  tournament raises nothing;
- a player who no-shows three tournament matches in a row against one opponent is chip
  dumping (MEDIUM, 0.2^3 = 0.008), as is one who no-shows against an account and the
  account sharing its device; a player who no-shows once raises nothing; the same
  events again, under new ids too, change nothing.

Expected figures are worked out by hand beside each assertion.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from services.kit.events.envelope import Envelope
from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.tournaments.v1 import events_pb2 as tournaments
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, fresh_network, logged_in, wait_for_alert
from tests.support.kafka import publish
from tests.support.play_events import match_analysed, money_game_ended, new_id, under_new_ids
from tests.support.services import RunningService
from tests.support.tournaments import match_ended

TOPIC = "tavla.tournaments.v1"
TOPICS = ("tavla.tournaments.v1", "tavla.game.v1", "tavla.analysis.v1", "tavla.accounts.v1")
RATING = antiabuse_events.ALERT_KIND_RATING_MANIPULATION
DUMPING = antiabuse_events.ALERT_KIND_CHIP_DUMPING
LOW, MEDIUM, HIGH = (
    antiabuse_events.SEVERITY_LOW,
    antiabuse_events.SEVERITY_MEDIUM,
    antiabuse_events.SEVERITY_HIGH,
)


def decided(
    tournament_id: str, match_id: str, game_id: str, winner: str, loser: str, decision: str
) -> Envelope:
    """The tournaments service's MatchDecided (keyed by the tournament, as it publishes)."""
    fact = tournaments.MatchDecided(
        tournament_id=tournament_id,
        match_id=match_id,
        game_id=game_id,
        winner_account_id=winner,
        loser_account_id=loser,
        decision=decision,
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return Envelope.wrap(
        topic=TOPIC, key=tournament_id, message=fact, source="tournaments", now=datetime.now(UTC)
    )


def level(player: str, epd: float) -> list[Envelope]:
    """Three money games won at ``epd`` per decision: the player's own level."""
    events = []
    for _ in range(3):
        game_id, rival = new_id(), new_id()
        events += [money_game_ended(game_id, player, rival),
                   match_analysed(game_id, [(player, epd), (rival, 0.03)])]
    return events


def played_match(
    winner: str, loser: str, loser_epd: float, match_id: str = "r1m1"
) -> tuple[str, list[Envelope]]:
    """A tournament match played through the game and analysed: its game id and events."""
    tournament_id, game_id = new_id(), new_id()
    return game_id, [
        match_ended(tournament_id, game_id, winner, loser),
        match_analysed(game_id, [(winner, 0.02), (loser, loser_epd)]),
        decided(tournament_id, match_id, game_id, winner, loser, "played"),
    ]


def no_show(winner: str, absent: str) -> Envelope:
    return decided(new_id(), "r1m1", new_id(), winner, absent, "no_show")


async def test_losing_a_tournament_match_far_below_ones_level_is_soft_play(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    softie, partner, honest, rival = (new_id() for _ in range(4))
    first, events = played_match(partner, softie, 0.10)  # >= 2.5 x 0.02 and >= 0.02 + 0.04
    _, honest_events = played_match(rival, honest, 0.03, "r2m1")  # under 0.06: ordinary
    # The tournament's decision first this time: the analysis completes the picture.
    events = [events[2], events[0], events[1]]
    await publish(bootstrap, level(softie, 0.02) + level(honest, 0.02))
    # Their own level known first: the topics' partitions are read in no set order.
    await support.all_consumed(bootstrap, TOPICS)
    await publish(bootstrap, events + honest_events)

    alert = await wait_for_alert(stub, softie, sorted([softie, partner]), LOW)
    assert alert.kind == RATING and alert.detector == "rating_manipulation"
    (evidence,) = alert.evidence
    assert evidence.kind == "tournament_soft_play" and list(evidence.game_ids) == [first]
    assert evidence.details["baseline_error_per_decision"] == "0.0200"
    assert evidence.details["error_per_decision"] == "0.1000"
    assert (evidence.details["loser"], evidence.details["round"]) == (softie, "1")

    # The pair meets again in another tournament, the same way: twice is HIGH.
    second, again = played_match(partner, softie, 0.09, "r3m2")
    await publish(bootstrap, again)
    high = await wait_for_alert(stub, softie, sorted([softie, partner]), HIGH)
    assert sorted(g for e in high.evidence for g in e.game_ids) == sorted([first, second])
    assert high.score == 2.0

    await support.all_consumed(bootstrap, TOPICS)
    assert await alerts_about(stub, honest) == []


async def test_forfeiting_again_and_again_to_one_person_is_chip_dumping(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver, giver2, receiver2, other_account, once, opponent = (
        new_id() for _ in range(7)
    )
    # receiver2 and other_account are one person: made together on one device.
    device, network = new_id(), fresh_network()
    links = [support.registered(receiver2, f"{receiver2}@example.com", "rex"),
             support.registered(other_account, f"{other_account}@example.com", "oth"),
             logged_in(receiver2, device, f"{network}.10"),
             logged_in(other_account, device, f"{network}.11")]
    forfeits = [no_show(receiver, giver) for _ in range(3)]
    linked = [no_show(receiver2, giver2), no_show(other_account, giver2),
              no_show(receiver2, giver2)]
    honest = [no_show(opponent, once)]  # one honest no-show
    await publish(bootstrap, links)
    await support.all_consumed(bootstrap, ["tavla.accounts.v1"])
    await publish(bootstrap, forfeits + linked + honest)

    alert = await wait_for_alert(stub, giver, sorted([giver, receiver]), MEDIUM)
    assert alert.kind == DUMPING and alert.detector == "chip_dumping"
    (evidence,) = alert.evidence
    assert evidence.kind == "forfeited_to_the_same_player"
    assert (evidence.details["forfeits"], evidence.details["matches_against"]) == ("3", "3")
    assert alert.score == pytest.approx(0.008)  # 3 of 3 at 0.2: 0.2^3

    group = await wait_for_alert(stub, giver2, sorted([giver2, receiver2, other_account]), MEDIUM)
    assert group.kind == DUMPING
    assert group.evidence[0].details["receivers"] == ",".join(sorted([receiver2, other_account]))

    # The same events again, and under new event ids: the same matches, nothing new.
    await publish(bootstrap, forfeits + under_new_ids(forfeits))
    await support.all_consumed(bootstrap, TOPICS)
    assert [a.alert_id for a in await alerts_about(stub, giver)] == [alert.alert_id]
    assert await alerts_about(stub, once) == []
    assert await alerts_about(stub, opponent) == []
