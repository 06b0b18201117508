"""Helpers for tournament tests: the tournaments service in-process beside real wallet,
game and geo services, an operator's CreateTournament, and the game's match results
as the game service publishes them."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.events.envelope import Envelope
from services.tournaments import main as tournaments_main
from tavla.accounts.v1 import events_pb2 as account_events
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.tournaments.v1 import tournaments_pb2, tournaments_pb2_grpc
from tests.support.identity import as_player
from tests.support.services import RunningService, fast_settings, start_service


async def start_tournaments(
    database_url: str,
    bootstrap: str,
    *,
    wallet_address: str,
    game_address: str,
    geo_address: str,
    drive_seconds: float = 0.2,
) -> RunningService:
    settings = tournaments_main.TournamentsSettings(
        wallet_address=wallet_address,
        game_address=game_address,
        drive_seconds=drive_seconds,
        geo_environ={"TAVLA_GEO_ADDRESS": geo_address} if geo_address else {},
    )
    return await start_service(
        fast_settings("tournaments", database_url, bootstrap),
        lambda runtime: tournaments_main.wiring(runtime, settings),
    )


def sit_and_go(
    seats: int, *, buy_in: int, fee: int, currency: str = "USD", lengths: tuple[int, ...] = (3,)
) -> tournaments_pb2.CreateTournamentRequest:
    return tournaments_pb2.CreateTournamentRequest(
        name=f"Sit & Go {seats}",
        rules=tournaments_pb2.Rules(
            sit_and_go=tournaments_pb2.SitAndGo(seats=seats),
            match_lengths=list(lengths),
            clock="blitz",
            currency=currency,
            buy_in=buy_in,
            entry_fee=fee,
            prize_table="standard",
        ),
        idempotency_key=uuid.uuid4().hex,
    )


def new_player() -> str:
    return str(uuid.uuid4())


async def get(
    stub: tournaments_pb2_grpc.TournamentsServiceStub, tournament_id: str, viewer: str
) -> tournaments_pb2.Tournament:
    found: tournaments_pb2.Tournament = await stub.GetTournament(
        tournaments_pb2.GetTournamentRequest(tournament_id=tournament_id),
        metadata=as_player(viewer),
    )
    return found


async def wait_until(
    stub: tournaments_pb2_grpc.TournamentsServiceStub,
    tournament_id: str,
    viewer: str,
    done: Callable[[tournaments_pb2.Tournament], bool],
    timeout: float = 30.0,
) -> tournaments_pb2.Tournament:
    """The tournament once ``done`` says so (polled as a player would)."""
    async with asyncio.timeout(timeout):
        while True:
            tournament = await get(stub, tournament_id, viewer)
            if done(tournament):
                return tournament
            await asyncio.sleep(0.1)


def match_ended(tournament_id: str, game_id: str, winner: str, loser: str) -> Envelope:
    """The game service's MatchEnded for a tournament match (its table is the tournament)."""
    fact = game_events.MatchEnded(
        game_id=game_id,
        table_id=tournament_id,
        match_length=3,
        winner_account_id=winner,
        loser_account_id=loser,
        final_score=[3, 1],
        reason=game_pb2.END_REASON_BORNE_OFF,
        stake=money_pb2.Money(minor_units=0, currency="PLAY"),
        players=[game_pb2.Player(account_id=winner), game_pb2.Player(account_id=loser)],
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return Envelope.wrap(
        topic="tavla.game.v1", key=game_id, message=fact, source="game", now=datetime.now(UTC)
    )


def no_show(tournament_id: str, game_id: str, absent: str, present: str) -> Envelope:
    """The game service's GameCancelled for a match ``absent`` never arrived at."""
    fact = game_events.GameCancelled(
        game_id=game_id,
        table_id=tournament_id,
        players=[game_pb2.Player(account_id=present), game_pb2.Player(account_id=absent)],
        reason=f"{absent[:8]} never arrived",
        absent_account_id=absent,
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return Envelope.wrap(
        topic="tavla.game.v1", key=game_id, message=fact, source="game", now=datetime.now(UTC)
    )


def self_excluded(account_id: str, until: datetime) -> Envelope:
    fact = account_events.AccountSelfExcluded(account_id=account_id)
    fact.until.FromDatetime(until)
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return Envelope.wrap(
        topic="tavla.accounts.v1", key=account_id, message=fact, source="accounts",
        now=datetime.now(UTC),
    )


async def scalar(database_url: str, sql: str, **params: object) -> object:
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            return await connection.scalar(text(sql), params)
    finally:
        await engine.dispose()


async def outbox_payloads(database_url: str, key: str, event: str) -> list[bytes]:
    """The payloads of the events of type ``event`` recorded in the outbox under ``key``."""
    engine = create_async_engine(database_url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT ce_type, payload FROM outbox WHERE key = :key ORDER BY seq"),
                {"key": key},
            )
            return [bytes(r.payload) for r in rows if r.ce_type.rsplit(".", 1)[-1] == event]
    finally:
        await engine.dispose()
