"""Deliberate disconnects' walked route through the real anti-abuse service, PostgreSQL and
broker: the game's ``PlayerDisconnected``, ``PlayerReconnected`` and ``GameEnded`` built with
its protos, each player's sessions a day apart and in their order on one key.

- a player who walked out of 2 losing games (0.2, 0.3) among 13 sessions, and whose
  connection never dropped and came back, is a DELIBERATE_DISCONNECT alert by this route
  alone: 78 x 0.0105^2 x 0.691994 x e^-0.585 = 0.00332 (the rate route: 0.0134);
- the same two losing stops from a player whose connection dropped and came back twice in
  their finished sessions are not (the one beyond the floor's implies a rate of 1 / (1.5 x
  13) a session: 0.0160).
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
from tests.support.play_events import new_id
from tests.support.services import RunningService


def _game(player: str, message: Any, at: datetime) -> Envelope:
    message.occurred_at.FromDatetime(at)
    return support.envelope("tavla.game.v1", player, message, "game")


def session(player: str, at: datetime, leaver_share: str | None = None,
            came_back: bool = False) -> list[Envelope]:
    """One money game of ``player`` ending at ``at``: finished (``player`` won; with
    ``came_back``, after a drop of theirs that came back in 40 s), or abandoned by
    ``player`` at ``leaver_share`` (a drop that never came back)."""
    game_id, opponent = new_id(), new_id()
    events: list[Envelope] = []
    if came_back:
        drop = game.PlayerDisconnected(game_id=game_id, game_number=1, account_id=player)
        back = game.PlayerReconnected(game_id=game_id, game_number=1, account_id=player)
        back.disconnected_for.FromTimedelta(timedelta(seconds=40))
        events += [_game(player, drop, at - timedelta(minutes=3)),
                   _game(player, back, at - timedelta(minutes=3) + timedelta(seconds=40))]
    shares: list[game.SettlementShare] = []
    reason, winner, loser = game_pb2.END_REASON_BORNE_OFF, player, opponent
    if leaver_share is not None:
        drop = game.PlayerDisconnected(game_id=game_id, game_number=1, account_id=player)
        events.append(_game(player, drop, at - timedelta(minutes=5)))
        shares = [game.SettlementShare(account_id=player, share=leaver_share),
                  game.SettlementShare(account_id=opponent,
                                       share=f"{1 - float(leaver_share):.4f}")]
        reason, winner, loser = game_pb2.END_REASON_DISCONNECTION, opponent, player
    ended = game.GameEnded(
        game_id=game_id, table_id=new_id(), game_number=1, kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=winner, loser_account_id=loser, cube_value=1, points=1,
        reason=reason,  # type: ignore[arg-type]
        stake=money_pb2.Money(minor_units=500, currency="USD"),
        players=[game_pb2.Player(account_id=winner), game_pb2.Player(account_id=loser)],
        shares=shares, analysed=bool(shares),
    )
    events.append(_game(player, ended, at))
    return events


def month(player: str, came_back: int) -> list[Envelope]:
    """11 finished sessions a day apart from 30 days ago (the first ``came_back`` of them
    with a drop that came back), then walks at 0.2 and 0.3 two days apart."""
    start = datetime.now(UTC) - timedelta(days=30)
    events = [e for day in range(11)
              for e in session(player, start + timedelta(days=day), came_back=day < came_back)]
    events += session(player, start + timedelta(days=12), "0.2000")
    events += session(player, start + timedelta(days=14), "0.3000")
    return events


async def test_walks_that_never_came_back_are_flagged_and_a_connection_that_comes_back_is_not(
    antiabuse: RunningService, stub: antiabuse_pb2_grpc.AntiAbuseServiceStub, kafka_broker: Any
) -> None:
    bootstrap = kafka_broker.bootstrap
    walker, dropper = new_id(), new_id()
    await publish(bootstrap, [*month(dropper, 2), *month(walker, 0)])

    alert = await wait_for_alert(stub, walker, [walker], antiabuse_events.SEVERITY_MEDIUM)
    assert alert.kind == antiabuse_events.ALERT_KIND_DELIBERATE_DISCONNECT
    # u at the floor 0.03 (largest there: 2 / (1.5 x 13) = 0.10 is above it): 78 x 0.0105^2
    # x 0.691994 x e^(-1.5 x 0.03 x 13) = 0.0059508 x 0.557106 = 0.003315.
    assert alert.score == 0.00332
    details = alert.evidence[0].details
    assert (details["sessions"], details["losing_walks"], details["came_back"]) == (
        "13", "2", "0")
    assert details["p_value_behind"] == "0.0134"  # the rate route: nothing
    await support.all_consumed(bootstrap, ["tavla.game.v1"])
    # The dropper: 2 drops came back, the one beyond the floor's implies 1 / (1.5 x 13) =
    # 0.051282 a session; the bound is largest there (u = 3 / 19.5 = 0.15 is above it):
    # 78 x (0.35 x 0.051282)^2 x 0.691994 x P(Poisson(1) <= 2) = 0.017389 x 0.919699 = 0.0160.
    assert await alerts_about(stub, dropper) == []
