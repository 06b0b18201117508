"""USD satellites on the real wallet, game and geo services: the winner's ticket is held
at the target, enters them with no money moving from them, cannot be used twice or turned
into cash by leaving, and a ticket never used goes back when the target starts; what a
pool leaves over whole tickets is paid in cash to the next finish; tickets are won as soon
as no more players remain than tickets (no later game is created); a scheduled satellite
counts its tickets at its draw, from the field it has then.

Worked by hand. The target: a 4-seat Sit & Go, buy-in 9.00 and fee 1.00, so a ticket is
worth 10.00. Each satellite: 4 seats, buy-in 2.50 and fee 0.25; its pool, 4 x 2.50 =
10.00, buys exactly one ticket, the champion's. Every player deposits 20.00; in a
satellite each has 20.00 - 2.75 = 17.25 left. The champion then holds 10.00 at the
target (9.00 + 1.00) and still has 17.25 to spend, before and after entering with the
ticket. When the target starts, its 4 fees (4.00, one of them the ticket's) go to the
house and the champion holds 9.00; the other satellite's champion, who never entered,
has their 10.00 back: 27.25 available.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import grpc
import pytest

from services.wallet.audit_cli import audit_database
from tavla.tournaments.v1 import events_pb2, tournaments_pb2
from tests.integration.tournaments.conftest import Venue
from tests.integration.tournaments.test_tournaments_scheduled import scheduled as scheduled_event
from tests.integration.tournaments.test_tournaments_scheduled import stamp
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.tournaments import (
    get,
    match_ended,
    new_player,
    outbox_payloads,
    scalar,
    sit_and_go,
    wait_until,
)
from tests.support.wallet import balance, fund

FUNDS = 2_000
TARGET_BUY_IN, TARGET_FEE = 900, 100
SATELLITE_BUY_IN, SATELLITE_FEE = 250, 25
LEFT = FUNDS - SATELLITE_BUY_IN - SATELLITE_FEE  # 1725
TOURNAMENT_FEE = 31  # the wallet's transfer code for entry fees (domain/ledger.py)


def satellite(
    target_id: str, buy_in: int = SATELLITE_BUY_IN
) -> tournaments_pb2.CreateTournamentRequest:
    request = sit_and_go(4, buy_in=buy_in, fee=SATELLITE_FEE, lengths=(1,))
    request.name = "Satellite 4"
    request.rules.prize_table = "tickets"
    request.rules.target_tournament_id = target_id
    return request


def register(tournament_id: str) -> tournaments_pb2.RegisterRequest:
    return tournaments_pb2.RegisterRequest(tournament_id=tournament_id)


def round_playing(round_number: int) -> object:
    def done(tournament: tournaments_pb2.Tournament) -> bool:
        matches = [m for m in tournament.bracket if m.round == round_number]
        return bool(matches) and all(
            m.state == tournaments_pb2.MATCH_STATE_PLAYING for m in matches
        )

    return done


async def play_satellite(
    venue: Venue, bootstrap: str, target_id: str, buy_in: int = SATELLITE_BUY_IN
) -> tuple[str, tournaments_pb2.Tournament]:
    """A satellite filled by four new players and won by the top seat of every match."""
    created = await venue.stub.CreateTournament(satellite(target_id, buy_in))
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_SATELLITE
    players = [new_player() for _ in range(4)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
        await venue.stub.Register(register(tid), metadata=as_player(player))
    for round_number in (1, 2):
        running = await wait_until(venue.stub, tid, players[0], round_playing(round_number))
        await publish(bootstrap, [
            match_ended(tid, m.game_id, m.players[0], m.players[1])
            for m in running.bracket if m.round == round_number
        ])  # fmt: skip
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    champion = finished.bracket[-1].winner_account_id
    if buy_in == SATELLITE_BUY_IN:  # the pool buys one ticket, nothing over
        for player in set(players) - {champion}:
            assert await balance(venue.wallet, player) == (LEFT, 0)
    return champion, finished


async def test_a_satellite_winner_enters_the_target_with_their_ticket_once(
    venue: Venue, kafka_broker: object
) -> None:
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    target = await venue.stub.CreateTournament(sit_and_go(4, buy_in=TARGET_BUY_IN, fee=TARGET_FEE))
    target_id = target.tournament_id

    champion, finished = await play_satellite(venue, bootstrap, target_id)
    [ticket] = finished.tickets
    assert (ticket.account_id, ticket.target_tournament_id) == (champion, target_id)
    assert ticket.value.minor_units == TARGET_BUY_IN + TARGET_FEE and not ticket.used
    assert not any(s.HasField("prize") for s in finished.standings)  # no cash prize
    # The ticket is held at the target in the champion's name: nothing more to spend.
    assert await balance(venue.wallet, champion) == (LEFT, TARGET_BUY_IN + TARGET_FEE)
    assert await audit_database(venue.wallet_url) == ()

    entered = await venue.stub.Register(register(target_id), metadata=as_player(champion))
    assert list(entered.entrants) == [champion]
    assert await balance(venue.wallet, champion) == (LEFT, TARGET_BUY_IN + TARGET_FEE)
    shown = await get(venue.stub, finished.tournament_id, champion)
    assert [t.used for t in shown.tickets] == [True]
    # The same player again changes nothing; leaving would cash the ticket: refused.
    again = await venue.stub.Register(register(target_id), metadata=as_player(champion))
    assert list(again.entrants) == [champion]
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await venue.stub.Unregister(
            tournaments_pb2.UnregisterRequest(tournament_id=target_id),
            metadata=as_player(champion),
        )
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "ticket" in (caught.value.details() or "")
    used = await scalar(
        venue.url, "SELECT count(*) FROM tickets WHERE target_id = :t AND used_at IS NOT NULL",
        t=target_id,
    )
    assert used == 1
    assert await balance(venue.wallet, champion) == (LEFT, TARGET_BUY_IN + TARGET_FEE)

    # A second satellite's champion never enters; three players pay their way in.
    unused_winner, _ = await play_satellite(venue, bootstrap, target_id)
    assert await balance(venue.wallet, unused_winner) == (LEFT, TARGET_BUY_IN + TARGET_FEE)
    for player in [new_player() for _ in range(3)]:
        await fund(venue.wallet, player, FUNDS)
        await venue.stub.Register(register(target_id), metadata=as_player(player))
    await wait_until(venue.stub, target_id, champion, round_playing(1))
    # The ticket's fee hold is the house's like any other; its buy-in is in the pool.
    assert await balance(venue.wallet, champion) == (LEFT, TARGET_BUY_IN)
    house = await scalar(
        venue.wallet_url,
        "SELECT sum(amount) FROM transfers WHERE code = :code AND reference = :ref",
        code=TOURNAMENT_FEE, ref=f"table:{target_id}",
    )
    assert house == 4 * TARGET_FEE

    # The unused ticket went back to its holder when the target started.
    async def released() -> bool:
        return await balance(venue.wallet, unused_winner) == (LEFT + 1_000, 0)

    for _ in range(100):
        if await released():
            break
        await asyncio.sleep(0.1)
    assert await released()
    assert await audit_database(venue.wallet_url) == ()


async def test_what_the_ticket_leaves_of_the_pool_is_the_runner_ups_in_cash(
    venue: Venue, kafka_broker: object
) -> None:
    """The satellite remainder rule, worked by hand: 4 x 3.00 = 12.00 buys one ticket of
    10.00 (the champion's) and leaves 2.00, paid in cash to the next finish, the runner-up:
    20.00 - 3.25 + 2.00 = 18.75. The semi-final losers have 16.75; the champion 16.75 to
    spend and the ticket's 10.00 held at the target."""
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    target = await venue.stub.CreateTournament(sit_and_go(4, buy_in=TARGET_BUY_IN, fee=TARGET_FEE))
    champion, finished = await play_satellite(venue, bootstrap, target.tournament_id, 300)
    runner_up = next(p for p in finished.bracket[-1].players if p != champion)
    left = FUNDS - 300 - SATELLITE_FEE
    assert [t.account_id for t in finished.tickets] == [champion]
    assert await balance(venue.wallet, champion) == (left, TARGET_BUY_IN + TARGET_FEE)
    assert await balance(venue.wallet, runner_up) == (left + 200, 0)
    for player in set(finished.entrants) - {champion, runner_up}:
        assert await balance(venue.wallet, player) == (left, 0)
    prizes = {s.account_id: s.prize.minor_units for s in finished.standings if s.HasField("prize")}
    assert prizes == {runner_up: 200}
    assert await audit_database(venue.wallet_url) == ()


async def test_satellites_that_cannot_be_run_are_refused_clearly(venue: Venue) -> None:
    target = await venue.stub.CreateTournament(sit_and_go(4, buy_in=TARGET_BUY_IN, fee=TARGET_FEE))
    now = datetime.now(UTC)
    scheduled = satellite(target.tournament_id)
    scheduled.rules.scheduled.CopyFrom(tournaments_pb2.Scheduled(
        registration_opens_at=stamp(now), registration_closes_at=stamp(now + timedelta(hours=1)),
        starts_at=stamp(now + timedelta(hours=2)), min_entrants=4, max_entrants=8,
    ))  # fmt: skip
    scheduled.rules.scheduled.min_entrants = 3  # 3 x 2.50 = 7.50 buys no ticket of 10.00
    # A scheduled target closing in an hour, and a satellite starting in two.
    early = await venue.stub.CreateTournament(scheduled_event(3_600, minimum=2))
    too_late = satellite(early.tournament_id, buy_in=2_600)  # 4 x 26.00 buys a ticket of 27.50
    too_late.rules.scheduled.CopyFrom(scheduled.rules.scheduled)
    too_late.rules.scheduled.min_entrants = 4
    cases = [
        (scheduled, "smallest field (3) does not buy one ticket"),
        (too_late, "its tickets could never be used"),
        (satellite("00000000-0000-0000-0000-000000000000"), "is no tournament here"),
    ]
    for request, reason in cases:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await venue.stub.CreateTournament(request)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert reason in (caught.value.details() or "")


async def finish_round(venue: Venue, bootstrap: str, tid: str, viewer: str, number: int) -> None:
    """Round ``number``'s games, once all created, each won by its top seat (byes aside)."""

    def all_playing(tournament: tournaments_pb2.Tournament) -> bool:
        played = [m for m in tournament.bracket if m.round == number and m.decision != "bye"]
        return bool(played) and all(m.state == tournaments_pb2.MATCH_STATE_PLAYING for m in played)

    running = await wait_until(venue.stub, tid, viewer, all_playing)
    await publish(bootstrap, [
        match_ended(tid, m.game_id, m.players[0], m.players[1])
        for m in running.bracket if m.round == number and m.game_id
    ])  # fmt: skip


async def test_two_tickets_among_four_are_won_by_the_first_rounds_winners_without_a_final(
    venue: Venue, kafka_broker: object
) -> None:
    """4 x 5.00 = 20.00 buys two tickets of 10.00 and nothing over: once the two first-round
    matches are decided, two players are left for two tickets, so both win one, equal, and
    the final is never created. Each winner: 20.00 - 5.25 = 14.75 to spend and 10.00 held at
    the target; each loser 14.75 and nothing held."""
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    target = await venue.stub.CreateTournament(sit_and_go(4, buy_in=TARGET_BUY_IN, fee=TARGET_FEE))
    created = await venue.stub.CreateTournament(satellite(target.tournament_id, buy_in=500))
    tid = created.tournament_id
    assert created.rules.ticket_value == TARGET_BUY_IN + TARGET_FEE
    plan = created.satellite_prizes
    assert (plan.tickets, plan.rounds_played, plan.remainder.minor_units) == (2, 1, 0)
    players = [new_player() for _ in range(4)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
        await venue.stub.Register(register(tid), metadata=as_player(player))
    await finish_round(venue, bootstrap, tid, players[0], 1)
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED
    )
    first_round = [m for m in finished.bracket if m.round == 1]
    winners = [m.players[0] for m in first_round]  # each match won by its top seat
    [final] = [m for m in finished.bracket if m.round == 2]
    assert sorted(final.players) == sorted(winners)
    assert (final.game_id, final.state) == ("", tournaments_pb2.MATCH_STATE_NOT_PLAYED)
    assert sorted(t.account_id for t in finished.tickets) == sorted(winners)
    assert {t.value.minor_units for t in finished.tickets} == {TARGET_BUY_IN + TARGET_FEE}
    assert {(s.best_place, s.worst_place) for s in finished.standings if s.alive} == {(1, 2)}
    assert not any(s.HasField("prize") for s in finished.standings)
    left = FUNDS - 500 - SATELLITE_FEE
    for player in players:
        held = TARGET_BUY_IN + TARGET_FEE if player in winners else 0
        assert await balance(venue.wallet, player) == (left, held)
    # Two games created (round 1's), none for the final; the finish names no champion.
    assert len(await outbox_payloads(venue.url, tid, "MatchStarted")) == 2
    [payload] = await outbox_payloads(venue.url, tid, "TournamentFinished")
    event = events_pb2.TournamentFinished.FromString(payload)
    assert event.champion_account_id == ""
    assert sorted(t.account_id for t in event.tickets) == sorted(winners)
    assert await audit_database(venue.wallet_url) == ()


async def test_a_scheduled_satellite_counts_its_tickets_at_its_draw(
    venue: Venue, kafka_broker: object
) -> None:
    """A scheduled satellite at 3.01 + 0.25, 4 to 8 entrants, to the 10.00 ticket. Seven
    register: 7 x 3.01 = 21.07 buys two tickets (three would split the semi-final losers: a
    field of 7 pays whole finishes of 1, 2 or 4), 20.00, leaving 1.07. The bracket of 8 has
    one bye (3 rounds); two players are left after round 2, the final is not played. The
    semi-final losers (3rd-4th) share 1.07: 0.53 each, and the 0.01 that does not divide
    goes to the ticket winner seated first. Shown before the close for the minimum, 4:
    4 x 3.01 = 12.04, one ticket and 2.04 to the runner-up."""
    bootstrap = kafka_broker.bootstrap  # type: ignore[attr-defined]
    target = await venue.stub.CreateTournament(sit_and_go(4, buy_in=TARGET_BUY_IN, fee=TARGET_FEE))
    now = datetime.now(UTC)
    closes = now + timedelta(seconds=12)
    request = satellite(target.tournament_id, buy_in=301)
    request.rules.scheduled.CopyFrom(tournaments_pb2.Scheduled(
        registration_opens_at=stamp(now - timedelta(minutes=1)),
        registration_closes_at=stamp(closes), starts_at=stamp(closes + timedelta(seconds=1)),
        min_entrants=4, max_entrants=8,
    ))  # fmt: skip
    created = await venue.stub.CreateTournament(request)
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_SATELLITE and created.prize_field == 4
    shown = created.satellite_prizes
    assert (shown.tickets, shown.remainder.minor_units, shown.remainder_each.minor_units) == (
        1, 204, 204
    )
    players = [new_player() for _ in range(7)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
        await venue.stub.Register(register(tid), metadata=as_player(player))
    registering = await get(venue.stub, tid, players[0])
    assert registering.status == tournaments_pb2.STATUS_REGISTERING
    plan = registering.satellite_prizes
    assert (plan.tickets, plan.rounds_played, plan.remainder.minor_units) == (2, 2, 107)
    assert (plan.remainder_best_place, plan.remainder_worst_place) == (3, 4)
    assert (plan.remainder_each.minor_units, plan.remainder_to_first.minor_units) == (53, 1)

    for round_number in (1, 2):
        await finish_round(venue, bootstrap, tid, players[0], round_number)
    finished = await wait_until(
        venue.stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED,
        timeout=60,
    )
    semis = [m for m in finished.bracket if m.round == 2]
    winners = [m.players[0] for m in semis]
    losers = [m.players[1] for m in semis]
    [final] = [m for m in finished.bracket if m.round == 3]
    assert final.state == tournaments_pb2.MATCH_STATE_NOT_PLAYED and not final.game_id
    assert sorted(t.account_id for t in finished.tickets) == sorted(winners)
    first = next(p for p in finished.seating if p in winners)  # seated first of the two
    prizes = {s.account_id: s.prize.minor_units for s in finished.standings if s.HasField("prize")}
    assert prizes == {losers[0]: 53, losers[1]: 53, first: 1}
    left = FUNDS - 301 - SATELLITE_FEE
    for player in players:
        held = TARGET_BUY_IN + TARGET_FEE if player in winners else 0
        assert await balance(venue.wallet, player) == (left + prizes.get(player, 0), held)
    # 3 first-round games (one bye) and 2 semi-finals; no final.
    assert len(await outbox_payloads(venue.url, tid, "MatchStarted")) == 5
    assert await audit_database(venue.wallet_url) == ()
