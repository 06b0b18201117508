"""Two replicas of the tournaments service on one database: both drivers run and both
consume the game's results, yet each match's game is created once, each result advances
the bracket once, and the prizes are paid once (play money, 4 seats, winner takes 70 %);
and a lobby's poll on either replica shows what the other committed."""

from __future__ import annotations

from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc
from tests.integration.tournaments.conftest import Venue
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.services import stop_service
from tests.support.tournaments import (
    get,
    match_ended,
    new_player,
    outbox_payloads,
    sit_and_go,
    start_tournaments,
    wait_until,
)
from tests.support.wallet import balance, top_up

TOP_UP = 1_000_000  # 10,000.00 PLAY
BUY_IN, FEE = 2_001, 100
# 4 x 20.01 = 80.04 at 70/30: 56.028 -> 56.02, 24.012 -> 24.01, one unit left to 1st.
FIRST, SECOND = 5_603, 2_401


async def test_two_replicas_run_a_sit_and_go_once(venue: Venue, kafka_broker: object) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    other = await start_tournaments(
        venue.url, bootstrap, wallet_address=venue.wallet_address,
        game_address=venue.game_address, geo_address=venue.geo_address,
    )  # fmt: skip
    try:
        created = await venue.stub.CreateTournament(
            sit_and_go(4, buy_in=BUY_IN, fee=FEE, currency="PLAY")
        )
        tid = created.tournament_id
        players = [new_player() for _ in range(4)]
        for player in players:
            await top_up(venue.wallet, player)
            await venue.stub.Register(
                tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
            )
        viewer = players[0]
        for round_number in (1, 2):
            current = await wait_until(
                venue.stub, tid, viewer,
                lambda t, r=round_number: any(
                    m.round == r and m.state == tournaments_pb2.MATCH_STATE_PLAYING
                    for m in t.bracket
                ) and all(m.game_id for m in t.bracket if m.round == r),
            )  # fmt: skip
            results = [
                match_ended(tid, m.game_id, m.players[0], m.players[1])
                for m in current.bracket
                if m.round == round_number
            ]
            await publish(bootstrap, results + results)
        finished = await wait_until(
            venue.stub, tid, viewer, lambda t: t.status == tournaments_pb2.STATUS_FINISHED
        )
    finally:
        await stop_service(other)
    final = finished.bracket[-1]
    assert await balance(venue.wallet, final.players[0], "PLAY") == (
        TOP_UP - BUY_IN - FEE + FIRST, 0
    )
    assert await balance(venue.wallet, final.players[1], "PLAY") == (
        TOP_UP - BUY_IN - FEE + SECOND, 0
    )
    for event, count in (("MatchStarted", 3), ("MatchDecided", 3), ("TournamentStarted", 1),
                         ("TournamentFinished", 1)):
        assert len(await outbox_payloads(venue.url, tid, event)) == count, event


async def test_a_poll_on_either_replica_shows_what_the_other_committed(
    venue: Venue, kafka_broker: object
) -> None:
    """Each replica keeps the lobby's messages and its committed aggregates; a change
    committed by the other (a registration, the draw, a result) is shown by the next poll,
    never the state that replica cached or showed before."""
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    other = await start_tournaments(
        venue.url, bootstrap, wallet_address=venue.wallet_address,
        game_address=venue.game_address, geo_address=venue.geo_address,
    )  # fmt: skip
    replicas = (venue.stub, tournaments_pb2_grpc.TournamentsServiceStub(other.channel))
    try:
        created = await venue.stub.CreateTournament(
            sit_and_go(4, buy_in=BUY_IN, fee=FEE, currency="PLAY")
        )
        tid = created.tournament_id
        players = [new_player() for _ in range(4)]
        for n, player in enumerate(players):
            await top_up(venue.wallet, player)
            for replica in replicas:  # both have shown (and cached) the state before
                assert player not in (await get(replica, tid, players[0])).entrants
            await replicas[n % 2].Register(
                tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
            )
            for replica in replicas:
                assert player in (await get(replica, tid, players[0])).entrants
        current = await wait_until(
            replicas[0], tid, players[0],
            lambda t: all(m.game_id for m in t.bracket if m.round == 1),
        )  # fmt: skip
        for n, match in enumerate(m for m in current.bracket if m.round == 1):
            winner, loser = match.players[n % 2], match.players[1 - n % 2]
            await publish(bootstrap, [match_ended(tid, match.game_id, winner, loser)])
            decided = lambda t, i=match.match_id: _decided(t, i)  # noqa: E731
            await wait_until(replicas[n % 2], tid, players[0], decided)
            seen = await get(replicas[1 - n % 2], tid, players[0])
            assert _decided(seen, match.match_id) == (winner, loser)
            standings = {s.account_id: s for s in seen.standings}
            assert not standings[loser].alive and standings[winner].wins == 1
    finally:
        await stop_service(other)


def _decided(tournament: tournaments_pb2.Tournament, match_id: str) -> tuple[str, str] | None:
    """The match's winner and loser once it is finished (None before)."""
    match = next(m for m in tournament.bracket if m.match_id == match_id)
    if match.state != tournaments_pb2.MATCH_STATE_FINISHED:
        return None
    loser = next(p for p in match.players if p != match.winner_account_id)
    return match.winner_account_id, loser
