"""The play detectors on the real PostgreSQL and broker, through the real anti-abuse
service, fed finished sessions as the game, analysis, matchmaking and wallet services
publish them (built with their protos):

- a rating tanker (three losses at 0.10 per decision against 0.02 in their wins) is a
  RATING_MANIPULATION alert, HIGH once their rating fell 100 and they won at tables
  rated below the fall; an honest loser (losses at 0.03 to 0.045) with an ordinary
  rating dip raises nothing;
- a pair whose results alternate over eight sessions is win trading; a pair with
  mixed results is not;
- a player who abandons five losing sessions (four money games, a match) is a
  DELIBERATE_DISCONNECT alert; one
  accidental disconnect (and one abandoned while winning) is not;
- a one-way money flow whose giver lost far below their level and took a hopeless
  double is chip dumping at HIGH; a weak player who simply loses ten real games at their
  own level (1/1024 by fair play between equals, over the 0.0001 line for real games)
  raises nothing;
- a dump giver's four losses far below their level to the one account their money flows
  to are chip dumping (HIGH) and not rating manipulation.

Expected figures are worked out by hand beside each assertion.
"""

from __future__ import annotations

from typing import Any

import pytest

from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, wait_for_alert
from tests.support.kafka import publish
from tests.support.play_events import (
    PLAY_TOPICS,
    abandoned,
    match_abandoned,
    match_analysed,
    money_game_ended,
    new_id,
    rating_changed,
    under_new_ids,
)
from tests.support.services import (
    RunningService,
)

RATING = antiabuse_events.ALERT_KIND_RATING_MANIPULATION
DISCONNECT = antiabuse_events.ALERT_KIND_DELIBERATE_DISCONNECT
DUMPING = antiabuse_events.ALERT_KIND_CHIP_DUMPING
MEDIUM, HIGH = antiabuse_events.SEVERITY_MEDIUM, antiabuse_events.SEVERITY_HIGH


def session(winner: str, loser: str, epd: dict[str, float], **analysed: Any) -> list[Any]:
    """A money game's end and its analysis (the caller picks their order)."""
    game_id = new_id()
    end = money_game_ended(game_id, winner, loser)
    analysis = match_analysed(game_id, list(epd.items()), **analysed)
    return [end, analysis]


async def test_a_rating_tanker_is_flagged_and_an_honest_loser_with_a_dip_is_not(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    tanker, honest = new_id(), new_id()
    events = []
    for _ in range(3):  # wins at 0.020 per decision: the tanker's level is 0.020
        rival = new_id()
        events += session(tanker, rival, {tanker: 0.02, rival: 0.03})
    losses = []
    for epd in (0.10, 0.12, 0.09):  # >= 2.5 x 0.020 = 0.05 and >= 0.020 + 0.04 = 0.06
        rival = new_id()
        end, analysis = session(rival, tanker, {tanker: epd, rival: 0.02})
        losses.append(end.key)
        events += [analysis, end]  # the analysis first this time
    for _ in range(3):
        rival = new_id()
        events += session(honest, rival, {honest: 0.02, rival: 0.03})
    for epd in (0.03, 0.045, 0.035, 0.04):  # a bad day: all under 0.05
        rival = new_id()
        events += session(rival, honest, {honest: epd, rival: 0.02})
    # The honest player's ordinary dip: 1500 to 1455 (45 < 100), a win against 1440.
    for n, (before, after) in enumerate(((1500, 1480), (1480, 1465), (1465, 1455))):
        events.append(rating_changed(f"dip-{honest}-{n}", honest, new_id(), before, after))
    rival = new_id()
    events += [
        rating_changed(f"up-{honest}", honest, rival, 1455, 1468),
        rating_changed(f"up-{honest}", rival, honest, 1440, 1427),
    ]
    await publish(bootstrap, events)

    alert = await wait_for_alert(stub, tanker, [tanker], MEDIUM)
    assert alert.kind == RATING and alert.detector == "rating_manipulation"
    (thrown,) = alert.evidence
    assert thrown.kind == "losses_below_own_level"
    assert sorted(thrown.game_ids) == sorted(losses)
    assert thrown.details["baseline_error_per_decision"] == "0.0200"
    assert alert.score == 3.0

    # The tanker's rating: 1600 down to 1500 over the three thrown losses, then wins
    # against players rated 1450 and 1480 (<= 1600 - 100): sandbagging, HIGH.
    steps = [(1600, 1570), (1570, 1540), (1540, 1500)]
    ratings = [
        rating_changed(game_id, tanker, new_id(), before, after)
        for game_id, (before, after) in zip(losses, steps, strict=True)
    ]
    for before, after, theirs in ((1500, 1512, 1450), (1512, 1525, 1480)):
        game_id, rival = new_id(), new_id()
        ratings += [
            rating_changed(game_id, tanker, rival, before, after),
            rating_changed(game_id, rival, tanker, theirs, theirs - 12),
        ]
    await publish(bootstrap, ratings)
    high = await wait_for_alert(stub, tanker, [tanker], HIGH)
    kinds = {e.kind: e for e in high.evidence}
    assert kinds["rating_drop_then_low_tables"].details["peak"] == "1600.0"
    assert kinds["rating_drop_then_low_tables"].details["trough"] == "1500.0"

    await support.all_consumed(bootstrap, PLAY_TOPICS)
    assert await alerts_about(stub, honest) == []


async def test_alternating_results_within_a_pair_are_win_trading(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    a, b, c, d = (new_id() for _ in range(4))
    traded = [money_game_ended(new_id(), *((a, b) if n % 2 else (b, a))) for n in range(8)]
    # c and d: ccdcddcd, the winner changes 5 times of 7: P = (21 + 7 + 1) / 128 = 0.23.
    mixed = [money_game_ended(new_id(), *((c, d) if w == "c" else (d, c))) for w in "ccdcddcd"]
    await publish(bootstrap, traded + mixed)

    alert = await wait_for_alert(stub, a, sorted([a, b]), MEDIUM)
    assert alert.kind == RATING
    (evidence,) = alert.evidence
    assert evidence.kind == "alternating_results"
    # 8 sessions, the winner changed after each: 7 of 7, p = 1/128 = 0.0078125.
    assert (evidence.details["sessions"], evidence.details["alternations"]) == ("8", "7")
    assert alert.score == pytest.approx(0.007812, abs=1e-6)
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    assert await alerts_about(stub, c) == []


async def test_disconnecting_when_losing_again_and_again_is_flagged_an_accident_is_not(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    leaver, unlucky = new_id(), new_id()
    games = [new_id() for _ in range(5)]
    events = [
        e
        for game_id, share in zip(games[:4], ("0.2000", "0.2500", "0.1000", "0.3000"), strict=True)
        for e in abandoned(game_id, leaver, new_id(), share)
    ]
    # The fifth a match, left at a 40% match-winning chance: its MatchEnded is the stop
    # (the last game's GameEnded of kind MATCH is not a second one).
    events += match_abandoned(games[4], leaver, new_id(), "0.4000")
    # The unlucky player's connection dropped once while losing, once while winning.
    events += abandoned(new_id(), unlucky, new_id(), "0.3000")
    events += abandoned(new_id(), unlucky, new_id(), "0.8000")
    await publish(bootstrap, events)

    alert = await wait_for_alert(stub, leaver, [leaver], MEDIUM)
    assert alert.kind == DISCONNECT and alert.detector == "deliberate_disconnect"
    (evidence,) = alert.evidence
    assert evidence.kind == "disconnected_when_losing"
    assert sorted(evidence.game_ids) == sorted(games)
    # Five of five losing against a base rate of 0.35: 0.35^5 = 0.00525.
    assert alert.score == pytest.approx(0.00525)
    assert evidence.details["abandoned"] == "5"
    # The same events again, and the same facts under new event ids: nothing new.
    await publish(bootstrap, events + under_new_ids(events))
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    assert [x.alert_id for x in await alerts_about(stub, leaver)] == [alert.alert_id]
    assert await alerts_about(stub, unlucky) == []
    # The risk profile counts the disconnections, and those that abandoned a losing
    # position (share <= 0.4): the leaver 5 and 5, the unlucky player 2 and 1.
    for account, dropped, losing in ((leaver, 5, 5), (unlucky, 2, 1)):
        profile = await stub.GetRiskProfile(
            antiabuse_pb2.GetRiskProfileRequest(account_id=account), metadata=support.officer()
        )
        assert (profile.recent_disconnects, profile.recent_losing_disconnects) == (
            dropped,
            losing,
        )


async def test_a_giver_who_plays_below_their_level_makes_chip_dumping_high(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver, weak, strong = (new_id() for _ in range(4))
    events, settlements = [], []
    for _ in range(3):  # the giver's level against others: 0.020
        rival = new_id()
        events += session(giver, rival, {giver: 0.02, rival: 0.03})
    dumped = []
    for n in range(4):
        end, analysis = session(
            receiver,
            giver,
            {giver: 0.10, receiver: 0.02},
            take=0.6 if n == 0 else 0.0,
            taker=giver,
        )
        dumped.append(end.key)
        events += [end, analysis]
        settlements.append(support.settled(end.key, receiver, giver, 1500))
    for _ in range(10):  # a weak player losing to a strong one, at their own level
        end, analysis = session(strong, weak, {weak: 0.05, strong: 0.01})
        events += [end, analysis]
        settlements.append(support.settled(end.key, strong, weak, 1500))
    # The sessions' ends and analyses first, then the money: the flow's finding is made
    # once, with every game's analysis known (an alert is not re-published with more
    # evidence at the same severity).
    await publish(bootstrap, events)
    await support.all_consumed(bootstrap, ["tavla.game.v1", "tavla.analysis.v1"])
    await publish(bootstrap, settlements)

    alert = await wait_for_alert(stub, giver, sorted([giver, receiver]), HIGH)
    assert alert.kind == DUMPING
    kinds = {e.kind: e for e in alert.evidence}
    assert sorted(kinds["played_below_own_level"].game_ids) == sorted(dumped)
    assert list(kinds["hopeless_double_taken"].game_ids) == [dumped[0]]

    # The weak player lost ten real games (30 decisions each) at their own level: no
    # level of their own (no wins), so judged against a beginner's 0.035, and 0.05 is not
    # far below it (< 0.0875): ten straight real games is 1/1024 > 0.0001, nothing.
    await support.all_consumed(bootstrap, PLAY_TOPICS)
    assert await alerts_about(stub, weak) == []


async def test_a_dump_givers_thrown_losses_are_chip_dumping_not_rating_manipulation(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    giver, receiver = new_id(), new_id()
    ends, analyses, settlements = [], [], []
    for _ in range(3):  # the giver's level against others: 0.020
        end, analysis = session(giver, new_id(), {giver: 0.02})
        ends.append(end)
        analyses.append(analysis)
    dumped = []
    for _ in range(4):  # 0.10 >= 2.5 x 0.020 and >= 0.020 + 0.04: far below, to one receiver
        end, analysis = session(receiver, giver, {giver: 0.10, receiver: 0.02})
        dumped.append(end.key)
        ends.append(end)
        analyses.append(analysis)
        settlements.append(support.settled(end.key, receiver, giver, 1500))
    # The ends and the money first (the wallet settles as the game ends), then the analyses
    # (minutes later, as the analysis service publishes them).
    await publish(bootstrap, ends + settlements)
    await support.all_consumed(bootstrap, ["tavla.game.v1", "tavla.wallet.v1"])
    await publish(bootstrap, analyses)

    alert = await wait_for_alert(stub, giver, sorted([giver, receiver]), HIGH)
    assert alert.kind == DUMPING
    await support.all_consumed(bootstrap, PLAY_TOPICS)
    # 4 thrown losses of 4 judged (P = 0.1^4 = 0.0001 for anyone else), but all to the one
    # account their money flows to: chip dumping's, not an attempt on the rating.
    assert [a.kind for a in await alerts_about(stub, giver)] == [DUMPING]
