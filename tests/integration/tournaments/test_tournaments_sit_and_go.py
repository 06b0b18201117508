"""An 8-seat USD Sit & Go on the real wallet, game and geo services: it fills, starts,
the fees become house revenue, each round's matches are created with the tournament's
rules, results advance the bracket exactly once, a no-show forfeits, and the winner and
runner-up are paid
by the prize table to the cent with a clean audit.

Worked by hand: buy-in 10.01, fee 0.99, 8 players. Registered, each has 20.00 - 11.00 =
9.00 available and 11.00 held; at the start the 8 fees (7.92) go to the house and 10.01
stays held. The pool is 8 x 10.01 = 80.08, paid 65/35 (the 8-slot row of "standard"):
80.08 x 0.65 = 52.052 -> 52.05 and 80.08 x 0.35 = 28.028 -> 28.02, one cent left over,
which goes to 1st: 52.06 and 28.02.
"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from services.geo.devdata import FLORIDA_IP
from services.tournaments.domain.draw import SeatingRecord, verify_seating
from services.wallet.audit_cli import audit_database
from tavla.game.v1 import game_pb2
from tavla.tournaments.v1 import events_pb2, tournaments_pb2
from tests.integration.tournaments.conftest import Venue
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.tournaments import (
    get,
    match_ended,
    new_player,
    no_show,
    outbox_payloads,
    scalar,
    self_excluded,
    sit_and_go,
    wait_until,
)
from tests.support.wallet import balance, fund

BUY_IN, FEE = 1_001, 99
FUNDS = 2_000
FIRST, SECOND = 5_206, 2_802
TOURNAMENT_FEE = 31  # the wallet's transfer code for entry fees (domain/ledger.py)


def register(tournament_id: str) -> tournaments_pb2.RegisterRequest:
    return tournaments_pb2.RegisterRequest(tournament_id=tournament_id)


def playing(round_number: int) -> object:
    def done(tournament: tournaments_pb2.Tournament) -> bool:
        matches = [m for m in tournament.bracket if m.round == round_number]
        return bool(matches) and all(
            m.state == tournaments_pb2.MATCH_STATE_PLAYING for m in matches
        )

    return done


async def decided_events(venue: Venue, tournament_id: str, match_id: str) -> int:
    """How many MatchDecided the service recorded for the match."""
    payloads = await outbox_payloads(venue.url, tournament_id, "MatchDecided")
    return sum(events_pb2.MatchDecided.FromString(p).match_id == match_id for p in payloads)


async def finish_round(
    venue: Venue,
    kafka: str,
    tournament: tournaments_pb2.Tournament,
    round_number: int,
    no_shows: tuple[str, ...] = (),
) -> None:
    """Every match of the round won by its top seat, as the game service reports it: by
    the match's end, or for the matches in ``no_shows`` by the bottom seat never arriving."""
    tid = tournament.tournament_id
    results = [
        no_show(tid, m.game_id, m.players[1], m.players[0])
        if m.match_id in no_shows
        else match_ended(tid, m.game_id, m.players[0], m.players[1])
        for m in tournament.bracket
        if m.round == round_number
    ]
    await publish(kafka, results)


async def test_an_eight_seat_sit_and_go_from_registration_to_payout(
    venue: Venue, kafka_broker: object
) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    created = await venue.stub.CreateTournament(sit_and_go(8, buy_in=BUY_IN, fee=FEE,
                                                           lengths=(3, 5, 7)))
    tid = created.tournament_id
    assert created.status == tournaments_pb2.STATUS_REGISTERING
    assert created.rules.kind == tournaments_pb2.KIND_SIT_AND_GO
    assert (created.rules.crawford, created.rules.jacoby, created.rules.beaver) == (
        True, False, False,
    )
    assert len(created.seed_commitment) == 64 and not created.seed

    players = [new_player() for _ in range(8)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
    for player in players[:6]:
        await venue.stub.Register(register(tid), metadata=as_player(player))
    assert await balance(venue.wallet, players[0]) == (FUNDS - BUY_IN - FEE, BUY_IN + FEE)

    # The seventh leaves before the start and has everything back, then comes again.
    seventh = players[6]
    await venue.stub.Register(register(tid), metadata=as_player(seventh))
    left = await venue.stub.Unregister(
        tournaments_pb2.UnregisterRequest(tournament_id=tid), metadata=as_player(seventh)
    )
    assert seventh not in left.entrants and left.status == tournaments_pb2.STATUS_REGISTERING
    assert await balance(venue.wallet, seventh) == (FUNDS, 0)
    again = await venue.stub.Register(register(tid), metadata=as_player(seventh))
    assert again.status == tournaments_pb2.STATUS_REGISTERING and len(again.entrants) == 7

    # The eighth seat starts it.
    last = players[7]
    await venue.stub.Register(register(tid), metadata=as_player(last))

    running = await wait_until(venue.stub, tid, last, playing(1))
    assert running.status == tournaments_pb2.STATUS_RUNNING
    assert running.prize_pool.minor_units == 8 * BUY_IN
    # The seed revealed matches the commitment published at creation, and redraws the seats.
    seed = bytes.fromhex(running.seed)
    assert hashlib.sha256(seed).hexdigest() == created.seed_commitment
    verify_seating(SeatingRecord(tid, created.seed_commitment, seed, tuple(running.seating)))
    assert sorted(running.seating) == sorted(players)

    # Fees are the house's; buy-ins stay held as the pool.
    for player in players:
        assert await balance(venue.wallet, player) == (FUNDS - BUY_IN - FEE, BUY_IN)
    house = await scalar(
        venue.wallet_url,
        "SELECT sum(amount) FROM transfers WHERE code = :code AND reference = :ref",
        code=TOURNAMENT_FEE, ref=f"table:{tid}",
    )
    assert house == 8 * FEE

    # Each round-1 match is a game with the tournament's rules.
    for match in (m for m in running.bracket if m.round == 1):
        game = await venue.games.GetGame(
            game_pb2.GetGameRequest(game_id=match.game_id), metadata=as_player(match.players[0])
        )
        rules = game.rules
        assert rules.kind == game_pb2.PLAY_KIND_MATCH and rules.match_length == 3
        assert rules.crawford and not rules.jacoby and not rules.beaver
        assert rules.clock.name == "blitz"
        assert {p.account_id for p in game.players} == set(match.players)

    # Round 1, r1m2's bottom seat a no-show, and r1m1's result delivered twice and once
    # more under another event id.
    await finish_round(venue, bootstrap, running, 1, no_shows=("r1m2",))
    top = next(m for m in running.bracket if m.match_id == "r1m1")
    duplicate = match_ended(tid, top.game_id, top.players[0], top.players[1])
    await publish(bootstrap, [duplicate, duplicate])
    second_round = await wait_until(venue.stub, tid, last, playing(2))
    assert await decided_events(venue, tid, "r1m1") == 1
    r2m1 = next(m for m in second_round.bracket if m.match_id == "r2m1")
    assert r2m1.players[0] == top.players[0]
    assert r2m1.match_length == 5
    winner_standing = next(s for s in second_round.standings if s.account_id == top.players[0])
    assert winner_standing.wins == 1
    forfeited = next(m for m in second_round.bracket if m.match_id == "r1m2")
    assert forfeited.decision == "no_show" and forfeited.winner_account_id == forfeited.players[0]
    assert list(r2m1.players)[1] == forfeited.players[0]

    await finish_round(venue, bootstrap, second_round, 2)
    final_round = await wait_until(venue.stub, tid, last, playing(3))
    final = next(m for m in final_round.bracket if m.round == 3)
    assert final.match_length == 7
    await finish_round(venue, bootstrap, final_round, 3)

    finished = await wait_until(
        venue.stub, tid, last, lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    champion, runner_up = final.players[0], final.players[1]
    assert (champion, runner_up) == (running.seating[0], running.seating[4])
    assert await balance(venue.wallet, champion) == (FUNDS - BUY_IN - FEE + FIRST, 0)
    assert await balance(venue.wallet, runner_up) == (FUNDS - BUY_IN - FEE + SECOND, 0)
    for player in set(players) - {champion, runner_up}:
        assert await balance(venue.wallet, player) == (FUNDS - BUY_IN - FEE, 0)
    prizes = {s.account_id: s.prize.minor_units for s in finished.standings if s.HasField("prize")}
    assert prizes == {champion: FIRST, runner_up: SECOND}
    assert await audit_database(venue.wallet_url) == ()

    # A full tournament takes nobody else, and nothing is held for them.
    latecomer = new_player()
    await fund(venue.wallet, latecomer, FUNDS)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.Register(register(tid), metadata=as_player(latecomer))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert await balance(venue.wallet, latecomer) == (FUNDS, 0)


async def test_self_excluded_and_blocked_players_cannot_register(
    venue: Venue, kafka_broker: object
) -> None:
    created = await venue.stub.CreateTournament(sit_and_go(4, buy_in=500, fee=50))
    tid = created.tournament_id
    florida, excluded = new_player(), new_player()
    for player in (florida, excluded):
        await fund(venue.wallet, player, FUNDS)

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.Register(register(tid), metadata=as_player(florida, address=FLORIDA_IP))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "location" in (caught.value.details() or "")
    assert await balance(venue.wallet, florida) == (FUNDS, 0)

    until = datetime.now(UTC) + timedelta(days=30)
    await publish(kafka_broker.bootstrap, [self_excluded(excluded, until)])  # type: ignore[attr-defined]
    refused = None
    for _ in range(100):
        try:
            await venue.stub.Register(register(tid), metadata=as_player(excluded))
        except grpc.aio.AioRpcError as error:
            refused = error
            break
        # Registered before the exclusion arrived: leave, and try again.
        await venue.stub.Unregister(
            tournaments_pb2.UnregisterRequest(tournament_id=tid), metadata=as_player(excluded)
        )
        await asyncio.sleep(0.1)  # the consumer's fetches gather for a second
    assert refused is not None and refused.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "self-excluded" in (refused.details() or "")
    assert await balance(venue.wallet, excluded) == (FUNDS, 0)
    assert excluded not in (await get(venue.stub, tid, excluded)).entrants


async def wait_refused(venue: Venue, tournament_id: str, player: str) -> None:
    """Until the service refuses ``player`` as self-excluded (its copy has the exclusion)."""
    async with asyncio.timeout(30):
        while True:
            try:
                await venue.stub.Register(register(tournament_id), metadata=as_player(player))
            except grpc.aio.AioRpcError as error:
                if "self-excluded" in (error.details() or ""):
                    return
            await asyncio.sleep(0.1)


async def test_bad_rules_and_unknown_tournaments_get_clear_answers(venue: Venue) -> None:
    bad = sit_and_go(6, buy_in=100, fee=10)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.CreateTournament(bad)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "seats" in (caught.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await get(venue.stub, tid := "00000000-0000-0000-0000-000000000000", new_player())
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert tid in (caught.value.details() or "")


async def test_a_player_who_excludes_themself_mid_tournament_forfeits_their_next_match(
    venue: Venue, kafka_broker: object
) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    created = await venue.stub.CreateTournament(sit_and_go(4, buy_in=500, fee=50))
    tid = created.tournament_id
    players = [new_player() for _ in range(4)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
        await venue.stub.Register(register(tid), metadata=as_player(player))
    running = await wait_until(venue.stub, tid, players[0], playing(1))
    semi = next(m for m in running.bracket if m.match_id == "r1m1")
    leaver = semi.players[0]
    until = datetime.now(UTC) + timedelta(days=7)
    await publish(bootstrap, [self_excluded(leaver, until)])
    # The tournaments' copy hears of it (a registration is refused) before the final is due.
    await wait_refused(venue, tid, leaver)
    await finish_round(venue, bootstrap, running, 1)
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    final = finished.bracket[-1]
    assert final.decision == "no_show" and final.winner_account_id != leaver
    assert leaver in final.players
    assert await audit_database(venue.wallet_url) == ()
