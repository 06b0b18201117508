"""The driver passes when something gives it work, not on a timer: with its fallback pass
a minute apart, a scheduled event still closes at its registration close, starts at its
start time, has its match created, and is paid as soon as the game's result is consumed."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import start_game_with_wallet
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.services import RunningService, new_database, stop_service
from tests.support.tournaments import match_ended, new_player, start_tournaments, wait_until
from tests.support.wallet import balance, start_wallet, top_up

FALLBACK_SECONDS = 60.0  # the longest the setting allows: no pass in this test is the fallback's
CLOSES_IN, STARTS_AFTER = 5.0, 2.0
BUY_IN, FEE = 1_000, 100


def _stamp(moment: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(moment)
    return value


def _scheduled_pair(now: datetime) -> tournaments_pb2.CreateTournamentRequest:
    closes = now + timedelta(seconds=CLOSES_IN)
    return tournaments_pb2.CreateTournamentRequest(
        name="Two at the stroke",
        rules=tournaments_pb2.Rules(
            scheduled=tournaments_pb2.Scheduled(
                registration_opens_at=_stamp(now - timedelta(minutes=1)),
                registration_closes_at=_stamp(closes),
                starts_at=_stamp(closes + timedelta(seconds=STARTS_AFTER)),
                min_entrants=2,
                max_entrants=2,
            ),
            match_lengths=[1],
            clock="standard",
            currency="PLAY",
            buy_in=BUY_IN,
            entry_fee=FEE,
            prize_table="standard",
        ),
        idempotency_key=uuid.uuid4().hex,
    )


async def test_a_scheduled_event_runs_on_its_times_and_results_without_the_fallback(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> None:
    # A stack of its own: another tournaments service in the results' consumer group (the
    # module fixture's) could take the match's result for a database without the match.
    urls = [
        postgres_server.url(new_database(postgres_server, name))
        for name in ("wallet_wakes", "game_wakes", "tournaments_wakes")
    ]
    bootstrap = kafka_broker.bootstrap
    wallet = await start_wallet(urls[0], bootstrap, geo_address=geo_service.address)
    game = await start_game_with_wallet(urls[1], bootstrap, wallet.address, geo_service.address)
    service = await start_tournaments(
        urls[2], bootstrap, wallet_address=wallet.address, game_address=game.address,
        geo_address=geo_service.address, drive_seconds=FALLBACK_SECONDS,
    )  # fmt: skip
    try:
        stub = tournaments_pb2_grpc.TournamentsServiceStub(service.channel)
        wallets = wallet_pb2_grpc.WalletServiceStub(wallet.channel)
        players = [new_player() for _ in range(2)]
        for player in players:
            await top_up(wallets, player)
        began = time.monotonic()
        created = await stub.CreateTournament(_scheduled_pair(datetime.now(UTC)))
        tid = created.tournament_id
        for player in players:
            await stub.Register(
                tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
            )
        before = {p: await balance(wallets, p, "PLAY") for p in players}
        # Woken by the close and then the start time: the draw, the fee, the game.
        playing = await wait_until(
            stub, tid, players[0],
            lambda t: t.status == tournaments_pb2.STATUS_RUNNING and bool(t.bracket[0].game_id),
            timeout=25,
        )  # fmt: skip
        assert time.monotonic() - began < FALLBACK_SECONDS / 2
        [final] = playing.bracket
        winner, loser = final.players
        # Woken by the consumer's commit: the result recorded, the prize paid.
        await publish(bootstrap, [match_ended(tid, final.game_id, winner, loser)])
        finished = await wait_until(
            stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED,
            timeout=25,
        )  # fmt: skip
        assert time.monotonic() - began < FALLBACK_SECONDS / 2
        assert finished.bracket[0].winner_account_id == winner
        # 2 x 10.00 PLAY, the 2-slot row: all of it to the winner; the fees are the house's.
        assert await balance(wallets, winner, "PLAY") == (before[winner][0] + 2 * BUY_IN, 0)
        assert await balance(wallets, loser, "PLAY") == (before[loser][0], 0)
    finally:
        for running in (service, game, wallet):
            await stop_service(running)
