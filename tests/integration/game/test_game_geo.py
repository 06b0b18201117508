"""Where players are during a real-money game: re-checked on a change of
address and on the clock, never on every move; a blocked player is told, the seat is
treated as disconnected and the disconnection rules settle the game.

The game service runs in-process on the real PostgreSQL and broker and asks the real
geo service (the ``geo_service`` fixture, on ``services/geo/devdata.py``'s databases);
a second game service on the same database reaches no geo service at all. Time is the
injectable clock: nothing sleeps. Stakes go through the test wallet (the game's
stake handling against the real wallet is ``test_game_stakes.py``'s).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.game.domain import RECONNECT_WINDOW
from services.geo.config import GeoSettings
from services.geo.devdata import (
    CITY,
    FLORIDA_IP,
    LONDON_IP,
    MALTA_IP,
    NEW_JERSEY_IP,
    write_anonymous,
    write_city,
)
from services.geo.main import build_service as build_geo
from services.geo.main import wiring as geo_wiring
from services.kit.clock import ManualClock
from services.kit.devstack.net import free_port
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tests.support.game import (
    FakeWallet,
    GameHandle,
    as_player,
    create_request,
    start_game_service,
    take_turn,
)
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)

RECHECK = timedelta(seconds=300)  # the default TAVLA_GAME_GEO_RECHECK_SECONDS
BLOCKED = "tavla.game.v1.PlayerLocationBlocked"


@dataclass
class Games:
    clock: ManualClock
    url: str
    up: GameHandle  # asks the geo service
    down: GameHandle  # same database, no geo service reachable


@pytest.fixture(scope="module")
async def games(
    postgres_server: Any, kafka_broker: Any, geo_service: RunningService
) -> AsyncIterator[Games]:
    url = postgres_server.url(new_database(postgres_server, "game_geo"))
    clock = ManualClock()
    wallet = FakeWallet()
    up = await start_game_service(
        url, kafka_broker.bootstrap, clock, wallet=wallet, geo_address=geo_service.address
    )
    down = await start_game_service(
        url, kafka_broker.bootstrap, clock, wallet=wallet, geo_address=f"127.0.0.1:{free_port()}"
    )
    yield Games(clock, url, up, down)
    await stop_service(down.running)
    await stop_service(up.running)


async def new_game(handle: GameHandle, currency: str = "USD") -> game_pb2.Game:
    """A money game (long reserves: only the reconnect window runs out here), the
    opening roll made and its winner to move."""
    request = create_request(currency=currency, reserve=3600)
    if currency != "PLAY":
        for index, player in enumerate(request.players):
            player.hold_id = f"hold-{index}-{player.account_id[:8]}"
    game: game_pb2.Game = await handle.stub.CreateGame(request)
    return game


def seat(game: game_pb2.Game, account: str) -> int:
    return next(i for i, p in enumerate(game.players) if p.account_id == account)


def other(game: game_pb2.Game, account: str) -> str:
    return next(p.account_id for p in game.players if p.account_id != account)


def move(game: game_pb2.Game) -> game_pb2.MoveRequest:
    return game_pb2.MoveRequest(
        game_id=game.game_id, expected_version=game.version, notation=game.legal_plays[0].notation
    )


async def refused(call: Any, code: grpc.StatusCode, *words: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    details = caught.value.details() or ""
    assert caught.value.code() == code, details
    for word in words:
        assert word in details, details
    return details


async def query(url: str, sql: str, **values: Any) -> list[Any]:
    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            return list((await connection.execute(text(sql), values)).all())
    finally:
        await engine.dispose()


async def events(url: str, game_id: str) -> list[str]:
    """The game's events as recorded with its state (the outbox), in commit order."""
    rows = await query(url, "SELECT ce_type FROM outbox WHERE key = :k ORDER BY seq", k=game_id)
    return [row.ce_type for row in rows]


async def located(url: str, game_id: str, player: int) -> tuple[str | None, Any]:
    """The seat's last checked address and when it was checked."""
    rows = await query(
        url,
        f"SELECT geo_address{player} AS address, geo_checked{player} AS checked "
        "FROM games WHERE game_id = :g",
        g=game_id,
    )
    return rows[0].address, rows[0].checked


async def to_move(stub: Any, game: game_pb2.Game, player: str) -> game_pb2.Game:
    """Turns (each from Malta) until it is ``player``'s move with the dice rolled."""
    while not (game.awaiting_account_id == player and game.phase == game_pb2.TURN_PHASE_MOVE):
        game = await take_turn(stub, game)
    return game


async def test_a_player_who_moves_to_florida_is_told_disconnected_and_settled(
    games: Games,
) -> None:
    stub = games.up.stub
    game = await new_game(games.up)
    watcher = game.awaiting_account_id  # plays the opening move, from Malta
    mover = other(game, watcher)
    game = await to_move(stub, game, mover)  # the mover rolled, from Malta
    updates = stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game.game_id), metadata=as_player(watcher)
    )
    assert (await updates.read()).event_type == ""  # the snapshot

    details = await refused(
        stub.Move(move(game), metadata=as_player(mover, address=FLORIDA_IP)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "playing for real money is not allowed from here",
        "[location_restricted]",
    )
    # The other player's stream says so at once.
    async with asyncio.timeout(30):
        update = await updates.read()
    updates.cancel()
    assert update.event_type == BLOCKED
    blocked = update.game.players[seat(game, mover)]
    assert not blocked.connected and "[location_restricted]" in blocked.location_blocked
    assert blocked.location_blocked in details
    deadline = blocked.reconnect_deadline.ToDatetime(tzinfo=UTC)
    assert deadline == games.clock.now() + RECONNECT_WINDOW
    assert update.game.version == game.version + 1  # the move was not played
    recorded = await events(games.url, game.game_id)
    assert recorded[-2:] == [BLOCKED, "tavla.game.v1.PlayerDisconnected"]

    # From Florida there is no way back: not by reconnecting, nor by leaving.
    from_florida = as_player(mover, address=FLORIDA_IP)
    leave = game_pb2.LeaveRequest(game_id=game.game_id, expected_version=update.game.version)
    for call in (
        stub.Reconnect(game_pb2.ReconnectRequest(game_id=game.game_id), metadata=from_florida),
        stub.Leave(leave, metadata=from_florida),
    ):
        await refused(call, grpc.StatusCode.FAILED_PRECONDITION, "[location_restricted]")

    # The window passes: the disconnection rules settle the game.
    games.clock.advance(RECONNECT_WINDOW + timedelta(seconds=1))
    await games.up.service.fire_due_timers()
    final = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(watcher)
    )
    assert final.status == game_pb2.GAME_STATUS_FINISHED
    assert final.last_outcome.reason == game_pb2.END_REASON_DISCONNECTION
    assert (await events(games.url, game.game_id))[-1] == "tavla.game.v1.GameEnded"
    # The block is in the action log: the record replays through it to the stored game.
    record = await stub.GetMatchRecord(
        game_pb2.GetMatchRecordRequest(game_id=game.game_id), metadata=as_player(watcher)
    )
    assert record.dice_seeds


async def test_a_blocked_player_who_comes_back_from_malta_in_time_plays_on(
    games: Games,
) -> None:
    stub = games.up.stub
    game = await new_game(games.up)
    mover = game.awaiting_account_id
    await refused(
        stub.Move(move(game), metadata=as_player(mover, address=FLORIDA_IP)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "[location_restricted]",
    )
    games.clock.advance(timedelta(minutes=2))
    seen = await stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(mover)
    )
    # The move the player saw just after the block, sent from Malta: they are back, and
    # it is played (their return, made in this call, does not make it stale).
    played = await stub.Move(move(seen), metadata=as_player(mover, address=MALTA_IP))
    me = played.players[seat(played, mover)]
    assert me.connected and me.location_blocked == ""
    assert played.awaiting_account_id != mover
    recorded = await events(games.url, game.game_id)
    assert recorded[-2:] == ["tavla.game.v1.PlayerReconnected", "tavla.game.v1.MovePlayed"]


async def test_an_allowed_change_of_address_is_checked_and_play_goes_on(games: Games) -> None:
    stub = games.up.stub
    game = await new_game(games.up)
    player = other(game, game.awaiting_account_id)
    index = seat(game, player)
    assert await located(games.url, game.game_id, index) == (None, None)  # no call yet
    game = await to_move(stub, game, player)  # the player's roll, from Malta: checked
    assert (await located(games.url, game.game_id, index))[0] == MALTA_IP

    games.clock.advance(timedelta(seconds=5))
    on_the_move = as_player(player, residence="MT", address=NEW_JERSEY_IP)
    played = await stub.Move(move(game), metadata=on_the_move)
    assert played.version == game.version + 1 and played.awaiting_account_id != player
    assert await located(games.url, game.game_id, index) == (NEW_JERSEY_IP, games.clock.now())


async def test_the_same_address_is_not_checked_on_every_move(games: Games) -> None:
    """Moves from the seat's last checked address within the interval ask nothing: not
    even a service whose geo service is unreachable refuses them."""
    game = await new_game(games.up)
    game = await to_move(games.up.stub, game, other(game, game.awaiting_account_id))
    checked = [await located(games.url, game.game_id, n) for n in (0, 1)]
    assert all(address == MALTA_IP for address, _ in checked)
    for _ in range(6):
        games.clock.advance(timedelta(seconds=10))
        game = await take_turn(games.down.stub, game)  # no geo behind this one
    assert [await located(games.url, game.game_id, n) for n in (0, 1)] == checked


async def test_while_geo_is_unreachable_a_call_that_needs_a_check_is_unavailable(
    games: Games,
) -> None:
    game = await take_turn(games.up.stub, await new_game(games.up))
    player = game.awaiting_account_id
    roll = game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version)
    new_place = as_player(player, address=NEW_JERSEY_IP)
    await refused(
        games.down.stub.Roll(roll, metadata=new_place),
        grpc.StatusCode.UNAVAILABLE,
        "the location check cannot be made now",
    )
    unchanged = await games.up.stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(player)
    )
    # Nothing happened, and the player's clock runs on as its rules say.
    assert unchanged.version == game.version
    awaited = unchanged.players[seat(unchanged, player)]
    assert awaited.connected and awaited.clock.expires_at == game.players[
        seat(game, player)
    ].clock.expires_at
    rolled = await games.up.stub.Roll(roll, metadata=new_place)  # geo is back
    assert rolled.version > game.version


async def test_seats_are_checked_again_on_the_clock_with_their_last_address(
    games: Games,
) -> None:
    game = await new_game(games.up)
    game = await to_move(games.up.stub, game, other(game, game.awaiting_account_id))
    before = [await located(games.url, game.game_id, n) for n in (0, 1)]
    assert all(address == MALTA_IP for address, _ in before)

    games.clock.advance(RECHECK - timedelta(seconds=1))
    await games.up.service.recheck_locations()
    assert [await located(games.url, game.game_id, n) for n in (0, 1)] == before

    games.clock.advance(timedelta(seconds=2))
    assert await games.up.service.recheck_locations() >= 2
    after = [await located(games.url, game.game_id, n) for n in (0, 1)]
    assert after == [(MALTA_IP, games.clock.now())] * 2
    # Geo out of reach: the sweep changes nothing and the seats stay due, so the next
    # call that needs a check is refused rather than let through.
    games.clock.advance(RECHECK)
    await games.down.service.recheck_locations()
    assert [await located(games.url, game.game_id, n) for n in (0, 1)] == after
    await refused(
        take_turn(games.down.stub, game),
        grpc.StatusCode.UNAVAILABLE,
        "the location check cannot be made now",
    )


async def test_play_money_is_never_located(games: Games) -> None:
    stub: game_pb2_grpc.GameServiceStub = games.down.stub  # no geo needed at all
    game = await new_game(games.down, currency="PLAY")
    for _ in range(4):
        who = as_player(game.awaiting_account_id, residence="US-FL", address=FLORIDA_IP)
        if game.phase == game_pb2.TURN_PHASE_MOVE:
            game = await stub.Move(move(game), metadata=who)
        else:
            roll = game_pb2.RollRequest(game_id=game.game_id, expected_version=game.version)
            game = await stub.Roll(roll, metadata=who)
    assert all(p.connected and not p.location_blocked for p in game.players)
    assert [await located(games.url, game.game_id, n) for n in (0, 1)] == [(None, None)] * 2
    games.clock.advance(RECHECK * 2)
    await games.up.service.recheck_locations()
    assert [await located(games.url, game.game_id, n) for n in (0, 1)] == [(None, None)] * 2


async def test_a_heartbeat_from_florida_blocks_the_seat_too(games: Games) -> None:
    game = await new_game(games.up)
    sitting = other(game, game.awaiting_account_id)  # waiting for the opponent's move
    beat = game_pb2.HeartbeatRequest(game_id=game.game_id)
    await games.up.stub.Heartbeat(beat, metadata=as_player(sitting))  # from Malta: fine
    await refused(
        games.up.stub.Heartbeat(beat, metadata=as_player(sitting, address=FLORIDA_IP)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "[location_restricted]",
    )
    now = await games.up.stub.GetGame(
        game_pb2.GetGameRequest(game_id=game.game_id), metadata=as_player(sitting)
    )
    me = now.players[seat(now, sitting)]
    assert not me.connected and "[location_restricted]" in me.location_blocked


async def test_the_periodic_check_blocks_a_seat_whose_last_address_is_now_in_florida(
    postgres_server: Any, kafka_broker: Any, tmp_path: Path
) -> None:
    """The player does not move; the address database does (geoipupdate replaced it):
    the sweep, asking with the seat's last address, finds it in Florida now."""
    city = write_city(tmp_path / "city.mmdb")
    geo = build_geo(GeoSettings(city, write_anonymous(tmp_path / "anonymous.mmdb")))
    geo_url = postgres_server.url(new_database(postgres_server, "geo_sweep"))
    geo_running = await start_service(
        fast_settings("geo", geo_url, kafka_broker.bootstrap),
        lambda runtime: geo_wiring(runtime, geo),
    )
    clock = ManualClock()
    handle = await start_game_service(
        postgres_server.url(new_database(postgres_server, "game_sweep")),
        kafka_broker.bootstrap,
        clock,
        wallet=FakeWallet(),
        geo_address=geo_running.address,
    )
    try:
        game = await new_game(handle)
        mover = game.awaiting_account_id
        in_london = as_player(mover, address=LONDON_IP)
        game = await handle.stub.Move(move(game), metadata=in_london)  # checked: allowed
        assert game.players[seat(game, mover)].connected

        # London's range is placed in Florida from now on.
        moved = {**CITY, "198.51.100.128/25": CITY["192.0.2.0/25"]}
        os.replace(write_city(tmp_path / "city.new", moved), city)
        geo.refresh_databases()
        clock.advance(RECHECK - timedelta(seconds=1))
        await handle.service.recheck_locations()
        still = await handle.stub.GetGame(
            game_pb2.GetGameRequest(game_id=game.game_id), metadata=in_london
        )
        assert still.players[seat(still, mover)].connected  # not due yet: nothing asked

        clock.advance(timedelta(seconds=2))
        assert await handle.service.recheck_locations() == 1  # the other seat never called
        swept = await handle.stub.GetGame(
            game_pb2.GetGameRequest(game_id=game.game_id), metadata=in_london
        )
        me = swept.players[seat(swept, mover)]
        assert not me.connected and "[location_restricted]" in me.location_blocked
        assert swept.version == game.version + 1
    finally:
        await stop_service(handle.running)
        await stop_service(geo_running)
        geo.close()
