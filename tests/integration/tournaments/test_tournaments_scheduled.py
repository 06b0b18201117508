"""A scheduled event below its minimum when registration closes is cancelled and every
buy-in and fee goes back: nothing taken, nothing left held, the audit clean."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from google.protobuf.timestamp_pb2 import Timestamp

from services.wallet.audit_cli import audit_database
from tavla.tournaments.v1 import events_pb2, tournaments_pb2
from tests.integration.tournaments.conftest import Venue
from tests.support.identity import as_player
from tests.support.tournaments import new_player, outbox_payloads, wait_until
from tests.support.wallet import balance, fund

FUNDS = 5_000


def stamp(moment: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(moment)
    return value


def scheduled(
    closes_in: float, *, minimum: int, starts_after: float = 1.0
) -> tournaments_pb2.CreateTournamentRequest:
    now = datetime.now(UTC)
    closes = now + timedelta(seconds=closes_in)
    return tournaments_pb2.CreateTournamentRequest(
        name="Saturday knockout",
        rules=tournaments_pb2.Rules(
            scheduled=tournaments_pb2.Scheduled(
                registration_opens_at=stamp(now - timedelta(minutes=1)),
                registration_closes_at=stamp(closes),
                starts_at=stamp(closes + timedelta(seconds=starts_after)),
                min_entrants=minimum,
                max_entrants=16,
            ),
            match_lengths=[1, 3],
            clock="standard",
            currency="USD",
            buy_in=2_500,
            entry_fee=250,
            prize_table="standard",
        ),
        idempotency_key=uuid.uuid4().hex,
    )


async def test_below_its_minimum_it_is_cancelled_with_every_hold_released(venue: Venue) -> None:
    players = [new_player() for _ in range(3)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
    created = await venue.stub.CreateTournament(scheduled(4.0, minimum=4))
    tid = created.tournament_id
    assert created.rules.kind == tournaments_pb2.KIND_SCHEDULED
    for player in players:
        await venue.stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
        assert await balance(venue.wallet, player) == (FUNDS - 2_750, 2_750)

    cancelled = await wait_until(
        venue.stub, tid, players[0],
        # finished_at: once every hold is released
        lambda t: t.status == tournaments_pb2.STATUS_CANCELLED and t.HasField("finished_at"),
        timeout=30,
    )
    assert "below the minimum of 4" in cancelled.cancel_reason
    assert not cancelled.seed and not cancelled.bracket  # never drawn: the seed stays secret
    for player in players:
        assert await balance(venue.wallet, player) == (FUNDS, 0)
    [payload] = await outbox_payloads(venue.url, tid, "TournamentCancelled")
    assert events_pb2.TournamentCancelled.FromString(payload).tournament_id == tid
    assert await audit_database(venue.wallet_url) == ()


async def test_at_its_minimum_it_is_drawn_at_the_close_and_starts_at_its_time(
    venue: Venue,
) -> None:
    players = [new_player() for _ in range(2)]
    for player in players:
        await fund(venue.wallet, player, FUNDS)
    request = scheduled(4.0, minimum=2, starts_after=3.0)
    created = await venue.stub.CreateTournament(request)
    tid = created.tournament_id
    for player in players:
        await venue.stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
    running = await wait_until(
        venue.stub, tid, players[0], lambda t: bool(t.bracket) and bool(t.bracket[0].game_id),
        timeout=30,
    )
    starts_at = request.rules.scheduled.starts_at.ToDatetime(tzinfo=UTC)
    assert running.started_at.ToDatetime(tzinfo=UTC) >= starts_at
    assert running.bracket[0].match_length == 1 and len(running.bracket) == 1
    assert running.prize_pool.minor_units == 2 * 2_500
    for player in players:  # the fee is the house's, the buy-in the pool
        assert await balance(venue.wallet, player) == (FUNDS - 2_750, 2_500)
