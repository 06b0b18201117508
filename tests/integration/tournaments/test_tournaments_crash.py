"""A `tavla serve tournaments` process SIGKILLed between a match's result and the next
round's game: the result was committed, its Kafka offset was not. The next process gets
the result again, the inbox skips it, and the driver creates the next round's game from
the stored bracket: the winner moved on once, one game for the match, prizes paid once.
And one SIGKILLed after the wallet settled a satellite's tickets and before it recorded
them: the next process settles by the same key, so each winner holds one ticket, not two.

No in-process tournaments service runs in this module, so the process alone is in the
results' consumer group."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from services.wallet.audit_cli import audit_database
from tavla.tournaments.v1 import events_pb2, tournaments_pb2, tournaments_pb2_grpc
from tavla.wallet.v1 import wallet_pb2_grpc
from tests.support.game import start_game_with_wallet
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.processes import ServeProcess, ServeProcesses, service_environment
from tests.support.services import RunningService, new_database, stop_service
from tests.support.tournaments import (
    match_ended,
    new_player,
    outbox_payloads,
    sit_and_go,
    wait_until,
)
from tests.support.wallet import balance, start_wallet, top_up

TOP_UP = 1_000_000  # 10,000.00 PLAY
BUY_IN, FEE = 1_000, 50
FIRST, SECOND = 2_800, 1_200  # 4 x 10.00 at 70/30


WALLET_URLS: dict[str, str] = {}  # the module's wallet database, for its audit


@pytest.fixture(scope="module")
async def others(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[tuple[RunningService, RunningService]]:
    urls = [postgres_server.url(new_database(postgres_server, p)) for p in ("w_kill", "g_kill")]
    wallet = await start_wallet(urls[0], kafka_broker.bootstrap, geo_address=geo_service.address)
    game = await start_game_with_wallet(
        urls[1], kafka_broker.bootstrap, wallet.address, geo_service.address
    )
    WALLET_URLS["wallet"] = urls[0]
    yield wallet, game
    for service in (game, wallet):
        await stop_service(service)


def _tournaments_environment(
    url: str,
    bootstrap: str,
    accounts: RunningService,
    wallet: RunningService,
    game: RunningService,
    geo: RunningService,
) -> dict[str, str]:
    """A tournaments process's settings beside these services, driving every 0.2 s."""
    return service_environment(
        "tournaments", url, bootstrap,
        accounts_address=accounts.address,
        TAVLA_WALLET_ADDRESS=wallet.address,
        TAVLA_GAME_ADDRESS=game.address,
        TAVLA_GEO_ADDRESS=geo.address,
        TAVLA_TOURNAMENTS_DRIVE_SECONDS="0.2",
    )  # fmt: skip


async def caught_up(process: ServeProcess) -> None:
    """Wait until the process's results consumer has applied everything on the broker."""
    url = f"http://127.0.0.1:{process.env['TAVLA_METRICS_PORT']}/metrics"
    async with httpx.AsyncClient(timeout=5) as client, asyncio.timeout(60):
        while True:
            text = (await client.get(url)).text
            lags = [
                sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
                if sample.name == "tavla_consumer_lag"
                and sample.labels.get("consumer") == "tournaments.matches"
            ]
            if lags and not any(lags):
                return
            await asyncio.sleep(0.2)


async def test_a_result_applied_before_a_kill_advances_the_bracket_once(
    others: tuple[RunningService, RunningService],
    postgres_server: Any,
    kafka_broker: Any,
    accounts_service: RunningService,
    geo_service: RunningService,
    serve: ServeProcesses,
) -> None:
    wallet_service, game = others
    wallet = wallet_pb2_grpc.WalletServiceStub(wallet_service.channel)
    url = postgres_server.url(new_database(postgres_server, "tournaments_kill"))
    environment = _tournaments_environment(
        url, kafka_broker.bootstrap, accounts_service, wallet_service, game, geo_service
    )
    # A first process takes the registrations and creates round 1, and reads the results
    # topic up to its end (earlier tests' results), then stops.
    first = await serve.start("tournaments", environment)
    channel = first.channel()
    stub = tournaments_pb2_grpc.TournamentsServiceStub(channel)
    created = await stub.CreateTournament(sit_and_go(4, buy_in=BUY_IN, fee=FEE, currency="PLAY"))
    tid = created.tournament_id
    players = [new_player() for _ in range(4)]
    for player in players:
        await top_up(wallet, player)
        await stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
    viewer = players[0]
    first_round = await wait_until(
        stub, tid, viewer, lambda t: all(m.game_id for m in t.bracket if m.round == 1)
    )
    await caught_up(first)
    await channel.close()
    first.stop()

    # The next one dies right after it commits the first result it applies.
    armed = await serve.start(
        "tournaments",
        {**environment, "TAVLA_FAILPOINTS": "tournaments.matches.after_db_commit=kill"},
    )
    top = next(m for m in first_round.bracket if m.match_id == "r1m1")
    await publish(kafka_broker.bootstrap, [match_ended(tid, top.game_id, *top.players)])
    await armed.wait_killed()

    restarted = await serve.start("tournaments", environment)
    channel = restarted.channel()
    stub = tournaments_pb2_grpc.TournamentsServiceStub(channel)
    try:
        # The other semi-final ends; the redelivered r1m1 changes nothing.
        other = next(m for m in first_round.bracket if m.match_id == "r1m2")
        await publish(kafka_broker.bootstrap, [match_ended(tid, other.game_id, *other.players)])
        final_round = await wait_until(
            stub, tid, viewer, lambda t: bool(t.bracket[-1].game_id), timeout=60
        )
        final = final_round.bracket[-1]
        assert list(final.players) == [top.players[0], other.players[0]]
        await publish(kafka_broker.bootstrap, [match_ended(tid, final.game_id, *final.players)])
        await wait_until(
            stub, tid, viewer, lambda t: t.status == tournaments_pb2.STATUS_FINISHED, timeout=60
        )
    finally:
        await channel.close()
    decided = [
        events_pb2.MatchDecided.FromString(p).match_id
        for p in await outbox_payloads(url, tid, "MatchDecided")
    ]
    assert sorted(decided) == ["r1m1", "r1m2", "r2m1"]
    started = await outbox_payloads(url, tid, "MatchStarted")
    assert len(started) == 3
    assert await balance(wallet, final.players[0], "PLAY") == (TOP_UP - BUY_IN - FEE + FIRST, 0)
    assert await balance(wallet, final.players[1], "PLAY") == (TOP_UP - BUY_IN - FEE + SECOND, 0)


async def test_a_satellite_killed_between_settling_and_recording_pays_its_tickets_once(
    others: tuple[RunningService, RunningService],
    postgres_server: Any,
    kafka_broker: Any,
    accounts_service: RunningService,
    geo_service: RunningService,
    serve: ServeProcesses,
) -> None:
    """4 x 5.00 PLAY = 20.00 buys two tickets of 9.00 + 1.00 to a 4-seat target: the two
    first-round winners win one each (no final). Each winner: 10,000.00 - 5.25 to spend and
    10.00 held at the target, once; each loser 10,000.00 - 5.25 and nothing held."""
    wallet_service, game = others
    wallet = wallet_pb2_grpc.WalletServiceStub(wallet_service.channel)
    url = postgres_server.url(new_database(postgres_server, "tournaments_kill_sat"))
    environment = _tournaments_environment(
        url, kafka_broker.bootstrap, accounts_service, wallet_service, game, geo_service
    )
    armed = await serve.start(
        "tournaments",
        {**environment, "TAVLA_FAILPOINTS": "tournaments.tickets.after_settle=kill"},
    )
    channel = armed.channel()
    stub = tournaments_pb2_grpc.TournamentsServiceStub(channel)
    target = await stub.CreateTournament(sit_and_go(4, buy_in=900, fee=100, currency="PLAY"))
    request = sit_and_go(4, buy_in=500, fee=25, currency="PLAY", lengths=(1,))
    request.rules.prize_table = "tickets"
    request.rules.target_tournament_id = target.tournament_id
    tid = (await stub.CreateTournament(request)).tournament_id
    players = [new_player() for _ in range(4)]
    for player in players:
        await top_up(wallet, player)
        await stub.Register(
            tournaments_pb2.RegisterRequest(tournament_id=tid), metadata=as_player(player)
        )
    first_round = await wait_until(
        stub, tid, players[0], lambda t: all(m.game_id for m in t.bracket if m.round == 1)
    )
    await channel.close()
    matches = [m for m in first_round.bracket if m.round == 1]
    await publish(kafka_broker.bootstrap, [
        match_ended(tid, m.game_id, *m.players) for m in matches
    ])  # fmt: skip
    await armed.wait_killed()  # settled by the wallet, not recorded here

    restarted = await serve.start("tournaments", environment)
    channel = restarted.channel()
    stub = tournaments_pb2_grpc.TournamentsServiceStub(channel)
    try:
        finished = await wait_until(
            stub, tid, players[0], lambda t: t.status == tournaments_pb2.STATUS_FINISHED,
            timeout=60,
        )
    finally:
        await channel.close()
    winners = sorted(m.players[0] for m in matches)
    assert sorted(t.account_id for t in finished.tickets) == winners
    assert finished.bracket[-1].state == tournaments_pb2.MATCH_STATE_NOT_PLAYED
    for player in players:
        held = 1_000 if player in winners else 0
        assert await balance(wallet, player, "PLAY") == (TOP_UP - 525, held)
    assert len(await outbox_payloads(url, tid, "TournamentFinished")) == 1
    assert len(await outbox_payloads(url, tid, "MatchStarted")) == 2
    assert await audit_database(WALLET_URLS["wallet"]) == ()
