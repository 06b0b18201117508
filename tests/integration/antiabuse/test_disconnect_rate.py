"""Deliberate disconnects' rate route through the real anti-abuse service, PostgreSQL and
broker (the game's ``PlayerDisconnected``, ``GameEnded`` and ``StopValued`` built with its
protos, each player's sessions a day apart and in their order on one key):

- a player who let the clock run out in 2 losing games among 6 sessions (4 played to the
  end) is a DELIBERATE_DISCONNECT alert: P(X >= 2 | Bin(6, 0.045 x 0.35)) = 0.00357 <=
  0.005, though 2 losing stops of 2 (0.35^2) are nothing to the stops-only test;
- a player with the same two losing stops among 30 sessions is not (0.0807);
- a newcomer whose first two sessions both dropped while losing, seven minutes apart (one
  connection problem, one outage), is not;
- a player whose same two losing stops in 6 sessions were drops is not: three drops of
  theirs came back, and the two beyond the first give their connection a rate of its own
  (2 / (1.5 x 6) + 0.015 a session: 0.0716);
- a player who let the clock run out in 3 losing games and dropped once in a winning one
  among 19 sessions is (one non-losing stop leaves the rate at its floor: 0.00313), a
  flaky player with two losing and two winning drops among 9 is not (the one winning drop
  beyond the floor's gives their rate: 0.097);
- two stops just under the line in 5 sessions flag a player of unknown strength (0.0024),
  not the same player analysed at PR 25 against PR 5 opponents (a deficit of 0.143 at a
  random moment: 0.0061);
- a player who let the clock run out far behind in their first 2 sessions and then finished
  their games is judged when their 5th session ends, at 0.001 (0.000845), not before; one
  whose clock ran out nearer the line is not (0.00172), nor one whose two losing stops as
  deep were drops, with three drops back (0.025).

Figures by hand beside each assertion (q = 0.01575 a session). Every player's connection
also dropped and came back 3 times (``PlayerReconnected``) before these sessions, so that the
walked route, which weighs drops that never came back against those that did, stays out of
these figures (its own test is ``test_disconnect_walked.py``): with 3 drops that came back it
is 0.01 to 0.2 for each player here. Those three also raise the rate of a player whose losing
stops include a drop (a connection that drops and comes back often), not of one who lost on
time: the walkers here let the clock run out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from services.kit.events.envelope import Envelope
from tavla.antiabuse.v1 import antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tests.support import antiabuse as support
from tests.support.antiabuse import alerts_about, wait_for_alert
from tests.support.kafka import publish
from tests.support.play_events import match_analysed, new_id
from tests.support.services import RunningService

DISCONNECT = antiabuse_events.ALERT_KIND_DELIBERATE_DISCONNECT


def session(
    player: str,
    at: datetime,
    leaver_share: str | None = None,
    game_id: str = "",
    opponent: str = "",
    timeout: bool = False,
) -> list[Envelope]:
    """One money game of ``player`` against an opponent (a fresh one unless given) ending
    at ``at``: played to the end (``player`` won), or stopped by ``player`` at
    ``leaver_share``: abandoned (a drop that did not come back), or with ``timeout`` lost on
    time (the rules settle it, then ``StopValued`` values where the clock ran out). Keyed by
    the player, so their sessions are consumed in this order."""
    game_id, opponent = game_id or new_id(), opponent or new_id()
    events: list[Envelope] = []
    shares: list[game.SettlementShare] = []
    reason, winner, loser = game_pb2.END_REASON_BORNE_OFF, player, opponent
    if leaver_share is not None:
        other_share = f"{1 - float(leaver_share):.4f}"
        shares = [
            game.SettlementShare(account_id=player, share=leaver_share),
            game.SettlementShare(account_id=opponent, share=other_share),
        ]
        reason, winner, loser = game_pb2.END_REASON_DISCONNECTION, opponent, player
        if timeout:
            reason = game_pb2.END_REASON_TIMEOUT
        else:
            drop = game.PlayerDisconnected(game_id=game_id, game_number=1, account_id=player)
            drop.occurred_at.FromDatetime(at - timedelta(seconds=30))
            events.append(support.envelope("tavla.game.v1", player, drop, "game"))
    ended = game.GameEnded(
        game_id=game_id,
        table_id=new_id(),
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=winner,
        loser_account_id=loser,
        cube_value=1,
        points=1,
        reason=reason,  # type: ignore[arg-type]
        stake=money_pb2.Money(minor_units=500, currency="USD"),
        players=[game_pb2.Player(account_id=winner), game_pb2.Player(account_id=loser)],
        shares=[] if timeout else shares,
        analysed=bool(shares) and not timeout,
    )
    ended.occurred_at.FromDatetime(at)
    events.append(support.envelope("tavla.game.v1", player, ended, "game"))
    if timeout:
        valued = game.StopValued(
            game_id=game_id,
            game_number=1,
            kind=game_pb2.PLAY_KIND_MONEY_GAME,
            reason=game_pb2.END_REASON_TIMEOUT,
            account_id=player,
            opponent_account_id=opponent,
            shares=shares,
            analysed=True,
            settlement=game.SettlementFigures(method="neural_net", on_roll_account_id=player),
        )
        valued.occurred_at.FromDatetime(at + timedelta(seconds=3))
        events.append(support.envelope("tavla.game.v1", player, valued, "game"))
    return events


def came_back(player: str, times: int = 3) -> list[Envelope]:
    """``times`` drops of ``player``'s that came back, 45 days ago (each in a game of its own)."""
    events: list[Envelope] = []
    for minute in range(times):
        back = game.PlayerReconnected(game_id=new_id(), game_number=1, account_id=player)
        back.disconnected_for.FromTimedelta(timedelta(seconds=40))
        back.occurred_at.FromDatetime(datetime.now(UTC) - timedelta(days=45, minutes=minute))
        events.append(support.envelope("tavla.game.v1", player, back, "game"))
    return events


def month(
    player: str, finished: int, drops: list[tuple[float, str]], timeout: bool = False
) -> list[Envelope]:
    """3 drops that came back, then ``finished`` sessions a day apart from 40 days ago, then
    each stop (hours after the last of them, its share): a drop, or with ``timeout`` a
    clock run out."""
    start = datetime.now(UTC) - timedelta(days=40)
    events = came_back(player)
    events += [e for day in range(finished) for e in session(player, start + timedelta(days=day))]
    last = start + timedelta(days=finished)
    for hours, share in drops:
        events += session(player, last + timedelta(hours=hours), share, timeout=timeout)
    return events


async def test_walking_from_two_of_six_sessions_is_flagged_and_chance_is_not(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    walker, regular, newcomer, dropper = new_id(), new_id(), new_id(), new_id()
    two_walks = [(0.0, "0.2000"), (48.0, "0.3000")]  # losing, two days apart
    events = month(regular, 28, two_walks, timeout=True)
    events += month(newcomer, 0, [(0.0, "0.2000"), (7 / 60, "0.0500")])
    events += month(dropper, 4, two_walks)
    events += month(walker, 4, two_walks, timeout=True)
    await publish(bootstrap, events)

    alert = await wait_for_alert(stub, walker, [walker], antiabuse_events.SEVERITY_MEDIUM)
    assert alert.kind == DISCONNECT and alert.detector == "deliberate_disconnect"
    # S = 6: 1 - 0.98425^6 - 6 x 0.01575 x 0.98425^5 = 1 - 0.909144 - 0.087289 = 0.00357;
    # by depth (0.16 and 0.25 over 0.35: V = 0.326531, H_2 = V (1 - ln V) = 0.691994) 15 x
    # 0.01575^2 x 0.691994 = 0.00257, the smaller.
    assert alert.score == 0.00257
    (evidence,) = alert.evidence
    assert (evidence.details["sessions"], evidence.details["losing_outages"]) == ("6", "2")
    assert (evidence.details["abandoned"], evidence.details["losing"]) == ("2", "2")
    assert evidence.details["losing_timeouts"] == "2"
    # Its three drops that came back say nothing of its clock: the rate stays at the floor.
    assert evidence.details["stop_rate"] == "0.0450"
    assert evidence.details["returned_rate"] == "0.0000"
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # The dropper: the same two stops as drops, and three drops of theirs came back: the two
    # beyond the first stand for 2 / 1.5 drops that did not come back in 6 sessions, 0.222222
    # a session, with the floor's timeout part 0.237222, q = 0.083028: by depth 15 x
    # 0.083028^2 x 0.691994 = 0.0716, the count 0.0826; the walked route (u up to 0.222222,
    # largest there) 15 x (0.35 x 0.222222)^2 x 0.691994 x P(Poisson(2) <= 3) = 0.0538.
    assert await alerts_about(stub, dropper) == []
    # The regular player: S = 30, 1 - 0.98425^30 - 30 x 0.01575 x 0.98425^29 = 0.0807; by
    # depth 435 x 0.01575^2 x 0.691994 = 0.0747.
    assert await alerts_about(stub, regular) == []
    # The newcomer: two drops seven minutes apart are one outage: k = 1.
    assert await alerts_about(stub, newcomer) == []


async def test_one_winning_drop_does_not_clear_a_walker_and_two_clear_a_flaky_player(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    walker, flaky = new_id(), new_id()
    events = month(walker, 15, [(0.0, "0.2700"), (24.0, "0.9800"), (48.0, "0.1900"),
                                (72.0, "0.3700")], timeout=True)  # fmt: skip
    events += month(flaky, 5, [(0.0, "0.2000"), (24.0, "0.6000"), (48.0, "0.9000"),
                               (72.0, "0.3000")])  # fmt: skip
    await publish(bootstrap, events)

    alert = await wait_for_alert(stub, walker, [walker], antiabuse_events.SEVERITY_MEDIUM)
    # 3 losing outages and 1 other in S = 19 at the floor (the one winning drop is within
    # it): 1 - (0.739610 + 0.224870 + 0.032385) = 0.003134 <= 0.005. At its third drop
    # (S = 18, 2 losing) it was 0.0321: nothing yet. By depth (0.22, 0.152, 0.32 over 0.35:
    # V = 0.249581, H_3 = 0.836397) 969 x 0.01575^3 x 0.836397 = 0.00317: the count's is
    # the smaller.
    assert alert.score == 0.00313
    (evidence,) = alert.evidence
    assert (evidence.details["sessions"], evidence.details["losing_outages"]) == ("19", "3")
    assert (evidence.details["other_outages"], evidence.details["stop_rate"]) == ("1", "0.0450")
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # The flaky player: at its third drop 1 losing and 2 others in S = 8 (nothing to test:
    # the route needs 2 losing); at the fourth, 2 losing and 2 others in S = 9: the one
    # beyond the floor's gives their rate 1 / (9 x 0.65), q = 0.059829: the count 1 -
    # 0.573933 - 0.328707 = 0.0974, by depth 36 x 0.059829^2 x 0.691994 = 0.0892. (Had the
    # second losing drop come before the second winning one, 2 losing (0.2, 0.3) and 1
    # other in 8 sessions would be 0.0048 by depth at the floor, as a walker's with one
    # winning drop; its three drops that came back give 2 / 12 + 0.015 = 0.181667 a session:
    # 28 x 0.063583^2 x 0.691994 = 0.078.)
    assert await alerts_about(stub, flaky) == []


def analysed_sessions(
    player: str, start: datetime, shares: list[str | None], error: float
) -> tuple[list[Envelope], list[Envelope]]:
    """``player``'s sessions a day apart from ``start`` (each finished, or abandoned at its
    share), each against a fresh opponent at PR 5 (error 0.01) with ``player`` at
    ``error``: the sessions' events and their analyses (a stop is a clock run out)."""
    ended: list[Envelope] = []
    analyses: list[Envelope] = []
    for day, share in enumerate(shares):
        game_id, opponent = new_id(), new_id()
        ended += session(player, start + timedelta(days=day), share, game_id, opponent, True)
        analyses.append(match_analysed(game_id, [(player, error), (opponent, 0.01)]))
    return ended, analyses


async def test_a_weak_players_drops_are_judged_at_their_deficit(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    weak, unknown = new_id(), new_id()
    start = datetime.now(UTC) - timedelta(days=20)
    shares: list[str | None] = [None, None, None, "0.3700"]
    weak_ended, weak_analysed = analysed_sessions(weak, start, shares, 0.05)
    last, last_analysed = analysed_sessions(weak, start + timedelta(days=5), ["0.3900"], 0.05)
    # The analyses first, so that the last drop is judged with all five levels kept.
    await publish(bootstrap, [*came_back(weak), *weak_ended, *weak_analysed, *last_analysed])
    await support.all_consumed(bootstrap, ["tavla.game.v1", "tavla.analysis.v1"])
    events = month(unknown, 3, [(0.0, "0.3700"), (48.0, "0.3900")], timeout=True)
    await publish(bootstrap, [*last, *events])

    # Unknown strength (no analyses): q = 0.01575, S = 5: 1 - 0.98425^5 - 5 x 0.01575 x
    # 0.98425^4 = 0.002403 (by depth 0.002465): MEDIUM.
    alert = await wait_for_alert(stub, unknown, [unknown], antiabuse_events.SEVERITY_MEDIUM)
    assert alert.score == 0.0024
    assert alert.evidence[0].details["deficit"] == "0"
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # PR 25 against PR 5 in 5 analysed sessions: 0.01 x 20 x 5 / 7 = 0.142857 behind at a
    # random moment; the line 0.35 + 0.142857 x 1.5 = 0.564286, q = 0.045 x 0.564286 =
    # 0.025393: 1 - 0.879322 - 0.114551 = 0.006127; by depth (0.920253 x 0.973418 = V =
    # 0.895791, H_2 = 0.994371) 10 x 0.025393^2 x 0.994371 = 0.006412: nothing.
    assert await alerts_about(stub, weak) == []


async def test_losing_stops_before_the_fifth_session_are_judged_when_it_ends(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    walker, newcomer, dropper = new_id(), new_id(), new_id()
    start = datetime.now(UTC) - timedelta(days=20)
    first: list[Envelope] = []
    for player, shares, timeout in (
        (walker, ("0.1000", "0.2000"), True),
        (newcomer, ("0.2000", "0.3000"), True),
        (dropper, ("0.1000", "0.2000"), False),
    ):
        first += came_back(player)
        first += session(player, start, shares[0], timeout=timeout)
        first += session(player, start + timedelta(days=1), shares[1], timeout=timeout)
        first += [e for day in (2, 3) for e in session(player, start + timedelta(days=day))]
    await publish(bootstrap, first)
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # Two losing stops in 4 sessions: no route judges a rate before the 5th session.
    assert await alerts_about(stub, walker) == []
    fifth = [
        e for p in (walker, newcomer, dropper) for e in session(p, start + timedelta(days=4))
    ]
    await publish(bootstrap, fifth)

    # The 5th session's end, finished, not a stop: S = 5, judged at 0.001. The count 1 -
    # 0.98425^5 - 5 x 0.01575 x 0.98425^4 = 0.002403; by depth (0.08 and 0.16 over 0.35: V =
    # 0.104490, H_2 = 0.340497) 10 x 0.01575^2 x 0.340497 = 0.000845: MEDIUM.
    alert = await wait_for_alert(stub, walker, [walker], antiabuse_events.SEVERITY_MEDIUM)
    assert alert.kind == DISCONNECT and alert.score == 0.000845
    (evidence,) = alert.evidence
    assert (evidence.details["sessions"], evidence.details["losing_outages"]) == ("5", "2")
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # The newcomer's stops nearer the line: by depth (V = 0.326531, H_2 = 0.691994) 10 x
    # 0.01575^2 x 0.691994 = 0.00172, under the stops' 0.005 but not the early stops' 0.001.
    assert await alerts_about(stub, newcomer) == []
    # The dropper's three drops that came back: the two beyond the first give 2 / (1.5 x 5)
    # + 0.015 = 0.281667 a session, q = 0.098583: by depth 10 x q^2 x 0.340497 = 0.0331; the
    # walked route at u = 2 / 7.5 = 0.266667: 10 x (0.35 u)^2 x 0.340497 x P(Poisson(2) <=
    # 3) = 0.0297 x 0.857123 = 0.0254: nothing.
    assert await alerts_about(stub, dropper) == []
