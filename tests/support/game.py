"""Helpers for game-service tests: start it in-process, scripted players, a fake wallet."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from google.protobuf.duration_pb2 import Duration

from services.game.main import GameSettings, build_service, wiring
from services.game.ports import Cover
from services.game.service import GameService
from services.kit.clock import Clock
from services.kit.devstack.net import free_port
from services.kit.geo_gate import GEO_ADDRESS, GeoGate
from services.kit.server import Runtime, Wiring
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2, game_pb2_grpc
from tests.support.identity import as_player
from tests.support.services import RunningService, fast_settings, start_service


@dataclass
class FakeWallet:
    """In-memory WalletPort: balances in minor units; records raised and claimed holds.

    It accepts every named hold: the real checks are the wallet's, tested against it.
    """

    balances: dict[str, int] = field(default_factory=dict)
    raised: list[tuple[str, int]] = field(default_factory=list)
    claimed: list[tuple[str, str, tuple[tuple[str, str], ...], int, str]] = field(
        default_factory=list
    )

    async def close(self) -> None:
        """Nothing to let go of: no connection."""

    async def claim_holds(
        self,
        table_id: str,
        game_id: str,
        seats: Sequence[tuple[str, str]],
        amount_minor: int,
        currency: str,
    ) -> None:
        self.claimed.append((table_id, game_id, tuple(seats), amount_minor, currency))

    async def can_cover(
        self, account_id: str, amount_minor: int, currency: str, hold_id: str
    ) -> Cover:
        balance = self.balances.get(account_id, 0)
        if balance >= amount_minor:
            return Cover(True)
        return Cover(False, f"balance {balance} cannot cover {amount_minor} {currency}")

    async def raise_hold(
        self, hold_id: str, amount_minor: int, currency: str, game_id: str, key: str
    ) -> None:
        self.raised.append((hold_id, amount_minor))


@dataclass
class GameHandle:
    """A running game service plus the service object (to drive timers and presence)."""

    running: RunningService
    service: GameService
    stub: game_pb2_grpc.GameServiceStub


def unreachable_analysis() -> str:
    """An analysis address nothing listens on: the game refuses to start without one, so
    a test with no analysis service says so by giving this (a call fails at once, and
    after the analysis wait the settlement is the even split, "not analysed")."""
    return f"127.0.0.1:{free_port()}"


def geo_gate(runtime: Runtime, geo_address: str | None) -> GeoGate:
    """The gate to the geo service at ``geo_address`` (the ``geo_service`` fixture's);
    None: no geo service (real-money calls that need a location check are refused)."""
    return GeoGate.from_env(runtime.credentials, {GEO_ADDRESS: geo_address} if geo_address else {})


async def start_game_service(
    database_url: str,
    bootstrap: str,
    clock: Clock | None = None,
    *,
    wallet: Any = None,
    background: bool = False,
    geo_address: str | None = None,
    settings: GameSettings | None = None,
) -> GameHandle:
    holder: dict[str, GameService] = {}
    # No analysis service unless the settings name one; waiting for none settles at once
    # by the even split, "not analysed" (tests of the wait give their own settings).
    chosen = settings or GameSettings(
        analysis_address=unreachable_analysis(), analysis_wait_seconds=0.0
    )

    def wire(runtime: Runtime) -> Wiring:
        geo = geo_gate(runtime, geo_address)
        service = build_service(runtime, chosen, wallet=wallet, geo=geo)
        holder["service"] = service
        return wiring(runtime, chosen, service=service, background=background)

    running = await start_service(fast_settings("game", database_url, bootstrap), wire, clock)
    return GameHandle(running, holder["service"], game_pb2_grpc.GameServiceStub(running.channel))


async def start_game_with_wallet(
    database_url: str, bootstrap: str, wallet_address: str, geo_address: str
) -> RunningService:
    """The game service reaching a real wallet service over gRPC (``GrpcWallet``), and
    locating real-money players with the geo service at ``geo_address``."""
    settings = GameSettings(
        analysis_address=unreachable_analysis(),
        wallet_address=wallet_address,
        analysis_wait_seconds=0.0,
    )

    def wire(runtime: Runtime) -> Wiring:
        service = build_service(runtime, settings, geo=geo_gate(runtime, geo_address))
        return wiring(runtime, settings, service=service, background=False)

    return await start_service(fast_settings("game", database_url, bootstrap), wire)


def seconds(value: float) -> Duration:
    duration = Duration()
    duration.FromTimedelta(timedelta(seconds=value))
    return duration


def create_request(
    *,
    match_length: int = 0,
    stake: int = 500,
    currency: str = "PLAY",
    crawford: bool = True,
    beaver: bool = False,
    move_delay: float = 12,
    reserve: float = 120,
    penalty: int = game_pb2.TIMEOUT_PENALTY_LOSE_GAME,
    idempotency_key: str = "",
) -> game_pb2.CreateGameRequest:
    players = [
        game_pb2.Player(account_id=str(uuid.uuid4()), display_name=name, rating=1500.0)
        for name in ("alice", "bob")
    ]
    kind = game_pb2.PLAY_KIND_MATCH if match_length else game_pb2.PLAY_KIND_MONEY_GAME
    rules = game_pb2.TableRules(
        kind=kind,
        match_length=match_length,
        stake=money_pb2.Money(minor_units=stake, currency=currency),
        beaver=beaver,
        crawford=crawford and bool(match_length),
        clock=game_pb2.ClockPreset(
            name="test",
            move_delay=seconds(move_delay),
            reserve_per_point=seconds(reserve),
            reserve_per_game=seconds(reserve),
            timeout_penalty=penalty,  # type: ignore[arg-type]
        ),
    )
    return game_pb2.CreateGameRequest(
        table_id=f"t-{uuid.uuid4().hex[:8]}",
        players=players,
        rules=rules,
        idempotency_key=idempotency_key,
    )


async def take_turn(stub: game_pb2_grpc.GameServiceStub, game: game_pb2.Game) -> game_pb2.Game:
    """The awaited player's simplest decision: roll, play the first legal play, or take."""
    who = as_player(game.awaiting_account_id)
    version = game.version
    if game.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE:
        return await stub.Roll(
            game_pb2.RollRequest(game_id=game.game_id, expected_version=version), metadata=who
        )
    if game.phase == game_pb2.TURN_PHASE_MOVE:
        request = game_pb2.MoveRequest(
            game_id=game.game_id, expected_version=version, notation=game.legal_plays[0].notation
        )
        return await stub.Move(request, metadata=who)
    if game.phase == game_pb2.TURN_PHASE_CUBE_RESPONSE:
        return await stub.Take(
            game_pb2.TakeRequest(game_id=game.game_id, expected_version=version), metadata=who
        )
    raise AssertionError(f"no scripted decision for phase {game.phase}")


async def play_out(
    stub: game_pb2_grpc.GameServiceStub, game: game_pb2.Game, max_calls: int = 5000
) -> game_pb2.Game:
    """Take turns until the session is over."""
    for _ in range(max_calls):
        if game.status != game_pb2.GAME_STATUS_IN_PROGRESS:
            return game
        game = await take_turn(stub, game)
    raise AssertionError("the game did not finish")
