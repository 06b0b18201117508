"""Match analysis end to end: the real game service plays a match, its MatchEnded on the
real broker makes the analysis service fetch the record (FetchMatchRecord, as the
declared caller "analysis"), grade it on a real worker pool, store it in PostgreSQL
and publish MatchAnalysed on ``tavla.analysis.v1``; GetMatchAnalysis serves it to the
two players only, over gRPC and through the real Envoy gateway (REST); a replayed
MatchEnded (same event id, or the same fact under a new one) changes nothing.

Decision times are known by construction: the game's clock is a ManualClock advanced
by exactly THINK seconds before every action, so every played decision took THINK
seconds by the game's own measure (its events' ``time_taken``).
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from services.analysis.config import AnalysisSettings, default_cache_dir
from services.analysis.consumers import MATCHES_GROUP
from services.analysis.main import wiring
from services.analysis.pool import EvaluationPool
from services.kit.clock import ManualClock
from services.kit.devstack.envoy import EnvoyGateway, render_config, write_config
from services.kit.devstack.keys import PRIVATE_KEY_FILE, ensure_signing_keys
from services.kit.devstack.net import free_port
from services.kit.devstack.supervisor import Supervisor
from services.kit.events.envelope import Envelope
from tavla.analysis.v1 import analysis_pb2, analysis_pb2_grpc, events_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tests.support.game import GameHandle, create_request, start_game_service, take_turn
from tests.support.gateway import DESCRIPTOR
from tests.support.identity import PLAYER_KEY_FILE, as_player, player_token
from tests.support.kafka import consumed_past, headers_of, publish
from tests.support.services import (
    RunningService,
    fast_settings,
    new_database,
    start_service,
    stop_service,
)
from tests.unit.analysis.test_match_analysis import CUBE_GAME

THINK = 3.0
CLOCK = ManualClock()
ANALYSIS_TOPIC = "tavla.analysis.v1"


@dataclass
class Stack:
    game: GameHandle
    analysis: RunningService
    stub: analysis_pb2_grpc.AnalysisServiceStub
    bootstrap: str


@pytest.fixture(scope="module")
async def stack(postgres_server: Any, kafka_broker: Any) -> AsyncIterator[Stack]:
    game_url = postgres_server.url(new_database(postgres_server, "game"))
    game = await start_game_service(game_url, kafka_broker.bootstrap, CLOCK)
    pool = EvaluationPool(1, 8, default_cache_dir())
    await pool.warm_up()
    settings = fast_settings(
        "analysis",
        postgres_server.url(new_database(postgres_server, "analysis")),
        kafka_broker.bootstrap,
    )
    chosen = AnalysisSettings(workers=1, queue=8, game_address=game.running.address)
    analysis = await start_service(settings, lambda runtime: wiring(runtime, pool, chosen))
    yield Stack(
        game,
        analysis,
        analysis_pb2_grpc.AnalysisServiceStub(analysis.channel),
        kafka_broker.bootstrap,
    )
    await stop_service(analysis)
    pool.close()
    await stop_service(game.running)


async def act(game: GameHandle, current: game_pb2.Game, *, double: bool) -> game_pb2.Game:
    CLOCK.advance(timedelta(seconds=THINK))
    if double:
        return await game.stub.Double(
            game_pb2.DoubleRequest(game_id=current.game_id, expected_version=current.version),
            metadata=as_player(current.awaiting_account_id),
        )
    return await take_turn(game.stub, current)


async def play_match(game: GameHandle, length: int) -> game_pb2.Game:
    """A session played with the first legal play, and (in a match) one early double."""
    current = await game.stub.CreateGame(create_request(match_length=length))
    doubled = False
    while current.status == game_pb2.GAME_STATUS_IN_PROGRESS:
        double = (
            length > 0
            and not doubled
            and current.phase == game_pb2.TURN_PHASE_ROLL_OR_DOUBLE
            and not current.crawford_game
            and not current.cube_owner_account_id
        )
        doubled = doubled or double
        current = await act(game, current, double=double)
    return current


async def analyses_of(bootstrap: str, game_id: str, timeout: float = 120.0) -> list[Any]:
    """Every MatchAnalysed record of ``game_id``, read to the end of the topic once at
    least one is there."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    found: list[Any] = []
    try:
        await consumer.topics()  # loads the cluster metadata
        numbers = sorted(consumer.partitions_for_topic(ANALYSIS_TOPIC) or [])
        partitions = [TopicPartition(ANALYSIS_TOPIC, n) for n in numbers]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        async with asyncio.timeout(timeout):
            while True:
                batches = await consumer.getmany(timeout_ms=500)
                for batch in batches.values():
                    found += [r for r in batch if r.key == game_id.encode()]
                ends = await consumer.end_offsets(partitions)
                at_end = all([await consumer.position(p) >= ends[p] for p in partitions])
                if found and at_end:
                    return found
    finally:
        await consumer.stop()


def check_figures(player: analysis_pb2.PlayerAnalysis) -> None:
    assert player.decisions == player.checker_decisions + player.cube_decisions > 0
    counted = [d for d in player.decision_list if d.counted]
    assert len(counted) == player.decisions
    total = sum(d.error for d in counted)
    assert player.error_per_decision == pytest.approx(total / player.decisions)
    assert player.performance_rating == pytest.approx(500 * total / player.decisions)
    tiers = [sum(lo <= d.error < hi for d in counted) for lo, hi in
             ((0.04, 0.08), (0.08, 0.16), (0.16, 99.0))]  # fmt: skip
    assert [player.doubtful, player.bad, player.very_bad] == tiers
    # Every counted play was a Move call made THINK seconds after the dice were shown.
    checker = [d for d in counted if d.kind == "checker"]
    assert checker and all(d.seconds == pytest.approx(THINK) for d in checker)
    timed = [d.seconds for d in player.decision_list if d.HasField("seconds")]
    assert player.seconds_per_decision == pytest.approx(sum(timed) / len(timed))
    # A counted checker play carries its rank and the second-best play's loss (two plays
    # at least); the best play is rank 1 and no error, a worse one loses at least the
    # second's; cube decisions carry none.
    for d in checker:
        assert d.HasField("rank") and d.HasField("second_loss")
        assert (d.rank == 1) == (d.error == 0.0) or d.second_loss == 0.0
        assert d.rank == 1 or d.error >= d.second_loss - 1e-12
    assert not any(d.HasField("rank") for d in counted if d.kind != "checker")


async def test_match_ended_is_analysed_published_once_and_served_to_its_players_only(
    stack: Stack,
) -> None:
    final = await play_match(stack.game, length=3)
    players = [p.account_id for p in final.players]

    records = await analyses_of(stack.bootstrap, final.game_id)
    assert len(records) == 1
    event = events_pb2.MatchAnalysed.FromString(records[0].value)
    assert headers_of(records[0])["ce_type"] == "tavla.analysis.v1.MatchAnalysed"
    assert [p.account_id for p in event.players] == players
    assert [p.name for p in event.players] == ["alice", "bob"]
    for player in event.players:
        check_figures(player)
    kinds = {d.kind for p in event.players for d in p.decision_list}
    assert {"checker", "double", "take"} <= kinds  # the scripted double was taken
    # The double and the take were timed from the game's CubeOffered / CubeTaken.
    cube = [d for p in event.players for d in p.decision_list if d.kind in ("double", "take")]
    assert cube and all(d.seconds == pytest.approx(THINK) for d in cube)

    for account in players:
        served = await stack.stub.GetMatchAnalysis(
            analysis_pb2.GetMatchAnalysisRequest(game_id=final.game_id),
            metadata=as_player(account),
        )
        assert served.analysis_id == event.analysis_id
        assert list(served.players) == list(event.players)
    with pytest.raises(grpc.aio.AioRpcError) as stranger:
        await stack.stub.GetMatchAnalysis(
            analysis_pb2.GetMatchAnalysisRequest(game_id=final.game_id),
            metadata=as_player("someone-else"),
        )
    assert stranger.value.code() == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stack.stub.GetMatchAnalysis(
            analysis_pb2.GetMatchAnalysisRequest(game_id="no-such-game"),
            metadata=as_player(players[0]),
        )
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

    # Replay: the same MatchEnded record again (same ce_id) and the same fact under a new id.
    ended = await game_ended_record(stack.bootstrap, final.game_id)
    again = Envelope(
        event_id=headers_of(ended)["ce_id"],
        topic="tavla.game.v1",
        key=final.game_id,
        ce_type="tavla.game.v1.MatchEnded",
        payload=ended.value,
        headers=headers_of(ended),
        created_at=CLOCK.now(),
    )
    fresh = Envelope.wrap(
        topic="tavla.game.v1",
        key=final.game_id,
        message=game_events.MatchEnded.FromString(ended.value),
        source="game",
        now=CLOCK.now(),
    )
    sent = await publish(stack.bootstrap, [again, fresh])
    async with asyncio.timeout(60):
        while not await consumed_past(stack.bootstrap, MATCHES_GROUP, "tavla.game.v1", sent):
            await asyncio.sleep(0.2)
    assert len(await analyses_of(stack.bootstrap, final.game_id)) == 1
    stored = await stack.stub.GetMatchAnalysis(
        analysis_pb2.GetMatchAnalysisRequest(game_id=final.game_id),
        metadata=as_player(players[1]),
    )
    assert stored.analysed_at == event.occurred_at and stored.analysis_id == event.analysis_id


async def game_ended_record(bootstrap: str, game_id: str) -> Any:
    consumer = AIOKafkaConsumer(
        "tavla.game.v1", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
        enable_auto_commit=False,
    )  # fmt: skip
    await consumer.start()
    try:
        async with asyncio.timeout(60):
            async for record in consumer:
                if record.key == game_id.encode() and (
                    headers_of(record)["ce_type"] == "tavla.game.v1.MatchEnded"
                ):
                    return record
    finally:
        await consumer.stop()
    raise AssertionError("no MatchEnded")


async def test_a_single_money_game_is_analysed_on_game_ended(stack: Stack) -> None:
    final = await play_match(stack.game, length=0)
    records = await analyses_of(stack.bootstrap, final.game_id)
    event = events_pb2.MatchAnalysed.FromString(records[0].value)
    assert [p.account_id for p in event.players] == [p.account_id for p in final.players]
    assert len(records) == 1 and event.plies == 0
    for player in event.players:
        check_figures(player)


async def test_players_read_their_analysis_through_the_gateway(
    stack: Stack, tmp_path: Path, session_supervisor: Supervisor
) -> None:
    """REST through the real Envoy config: GET /v1/games/{game_id}/analysis."""
    final = await play_match(stack.game, length=0)
    await analyses_of(stack.bootstrap, final.game_id)
    # The gateway verifies with the key the tests' players sign with (its JWKS is made from it).
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)
    keys = ensure_signing_keys(tmp_path)
    listen, admin = free_port(), free_port()
    config = render_config(
        descriptor=DESCRIPTOR, jwks_file=keys.jwks_file,
        upstreams={"analysis": stack.analysis.settings.grpc_port},
        listen_port=listen, admin_port=admin, health_interval=0.2,
    )  # fmt: skip
    gateway = EnvoyGateway(write_config(tmp_path / "envoy.json", config), listen, admin,
                           session_supervisor)  # fmt: skip
    gateway.start()
    path = f"/v1/games/{final.game_id}/analysis"
    try:
        async with httpx.AsyncClient(base_url=gateway.base_url, timeout=10) as client:
            async with asyncio.timeout(60):
                while (await client.get("/healthz")).status_code != 200:
                    await asyncio.sleep(0.1)
            assert (await client.get(path)).status_code == 401
            for player in final.players:
                headers = {"authorization": f"Bearer {player_token(player.account_id)}"}
                answer = await client.get(path, headers=headers)
                assert answer.status_code == 200, answer.text
                body = answer.json()
                assert body["gameId"] == final.game_id
                ids = [p["accountId"] for p in body["players"]]
                assert ids == [p.account_id for p in final.players]
                assert all(p["checkerDecisions"] > 0 for p in body["players"])
            stranger = {"authorization": f"Bearer {player_token('someone-else')}"}
            assert (await client.get(path, headers=stranger)).status_code == 403
    finally:
        gateway.stop()


async def test_analyse_match_grades_a_given_mat_text_without_storing_it(stack: Stack) -> None:
    analysis = await stack.stub.AnalyseMatch(analysis_pb2.AnalyseMatchRequest(mat_text=CUBE_GAME))
    alice, bob = analysis.players
    assert (alice.name, bob.name) == ("alice", "bob")
    assert (bob.checker_decisions, bob.cube_decisions) == (2, 2)  # counted by hand
    assert not analysis.game_id
    with pytest.raises(grpc.aio.AioRpcError) as bad:
        await stack.stub.AnalyseMatch(
            analysis_pb2.AnalyseMatchRequest(mat_text=CUBE_GAME.replace("13/11 13/8", "13/11 13/7"))
        )
    assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "line 6" in (bad.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as unknown:
        await stack.stub.AnalyseMatch(analysis_pb2.AnalyseMatchRequest(game_id="never-played"))
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_match_the_game_service_does_not_know_is_skipped_not_retried(
    stack: Stack,
) -> None:
    """Retrying a record the game service refuses (NOT_FOUND) would stop the partition."""
    fact = game_events.MatchEnded(
        game_id="never-played",
        players=[game_pb2.Player(account_id="a"), game_pb2.Player(account_id="b")],
    )
    envelope = Envelope.wrap(
        topic="tavla.game.v1", key=fact.game_id, message=fact, source="game", now=CLOCK.now()
    )
    sent = await publish(stack.bootstrap, [envelope])
    async with asyncio.timeout(60):
        while not await consumed_past(stack.bootstrap, MATCHES_GROUP, "tavla.game.v1", sent):
            await asyncio.sleep(0.2)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stack.stub.GetMatchAnalysis(
            analysis_pb2.GetMatchAnalysisRequest(game_id="never-played"), metadata=as_player("a")
        )
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
