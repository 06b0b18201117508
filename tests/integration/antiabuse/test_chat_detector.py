"""The chat detectors on the real stack: the real game service's chat (PostgreSQL, the
broker, its outbox) feeds the real anti-abuse service, which raises alerts on
``tavla.compliance.alerts.v1``.

- a harasser whose three offensive messages were refused is a MEDIUM chat-abuse alert,
  its evidence the ids (as the game recorded them) and excerpts of those messages;
- a spammer refused for a link, solicitation and a repeat is a MEDIUM chat-abuse alert;
- a player asking about "the other table" and pasting a Position ID is a consulting
  alert (the contract's collusion kind);
- two players chatting ordinarily raise nothing;
- lobby messages are kept with their room and judged with the sender's table chat: one
  offensive message at a table and two in the lobby are a MEDIUM chat-abuse alert whose
  evidence names the game and the lobby rooms.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import grpc
import pytest
from google.protobuf.message import Message

from services.kit.clock import ManualClock
from tavla.antiabuse.v1 import antiabuse_pb2, antiabuse_pb2_grpc
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tests.support import antiabuse as support
from tests.support.game import GameHandle, as_player, create_request, start_game_service
from tests.support.services import (
    RunningService,
    new_database,
    stop_service,
)

ALERTS = "tavla.compliance.alerts.v1"
CLOCK = ManualClock()


@pytest.fixture(scope="module")
def game_database(postgres_server: Any) -> str:
    url: str = postgres_server.url(new_database(postgres_server, "game_chat_abuse"))
    return url


@pytest.fixture(scope="module")
async def game(game_database: str, kafka_broker: Any) -> AsyncIterator[GameHandle]:
    handle = await start_game_service(game_database, kafka_broker.bootstrap, CLOCK)
    yield handle
    await stop_service(handle.running)


async def chat(game: GameHandle, game_id: str, who: str, texts: Sequence[str]) -> None:
    """Post each text as ``who``, refused or not, a few seconds apart (below the rate limit)."""
    for text in texts:
        try:
            await game.stub.PostChatMessage(
                game_pb2.PostChatMessageRequest(game_id=game_id, text=text),
                metadata=as_player(who),
            )
        except grpc.aio.AioRpcError as refused:
            assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION, refused.details()
        CLOCK.advance(timedelta(seconds=3))


async def table(game: GameHandle) -> tuple[str, str, str]:
    created = await game.stub.CreateGame(create_request())
    return created.game_id, created.players[0].account_id, created.players[1].account_id


async def recorded_ids(database_url: str, game_id: str, account_id: str) -> list[str]:
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT message_id FROM chat_messages WHERE game_id = $1 AND account_id = $2"
            " ORDER BY seq",
            game_id,
            account_id,
        )
    finally:
        await connection.close()
    return [row["message_id"] for row in rows]


def alerts_on(account_id: str) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != antiabuse_events.ComplianceAlert.DESCRIPTOR.full_name:
            return None
        alert = antiabuse_events.ComplianceAlert.FromString(payload)
        return alert if account_id in alert.subject_account_ids else None

    return decode


async def alert_for(bootstrap: str, account_id: str) -> antiabuse_events.ComplianceAlert:
    (alert,) = await support.read_topic(
        bootstrap, ALERTS, alerts_on(account_id), lambda found: len(found) >= 1
    )
    assert isinstance(alert, antiabuse_events.ComplianceAlert)
    return alert


def chat_events_of(game_ids: set[str]) -> Any:
    def decode(ce_type: str, payload: bytes) -> Message | None:
        if ce_type != game_events.ChatMessagePosted.DESCRIPTOR.full_name:
            return None
        fact = game_events.ChatMessagePosted.FromString(payload)
        return fact if fact.game_id in game_ids else None

    return decode


async def test_a_harasser_is_flagged_with_the_recorded_messages(
    game: GameHandle, antiabuse: RunningService, kafka_broker: Any, game_database: str
) -> None:
    game_id, harasser, victim = await table(game)
    await chat(
        game,
        game_id,
        harasser,
        ["you fucking idiot", "gg", "what a piece of shit you are", "go to hell bitch"],
    )
    alert = await alert_for(kafka_broker.bootstrap, harasser)
    assert alert.kind == antiabuse_events.ALERT_KIND_CHAT_ABUSE
    assert alert.detector == "chat_abuse" and list(alert.subject_account_ids) == [harasser]
    assert alert.severity == antiabuse_events.SEVERITY_MEDIUM and alert.score == 3.0
    (evidence,) = alert.evidence
    assert evidence.kind == "offensive_language" and list(evidence.game_ids) == [game_id]
    recorded = await recorded_ids(game_database, game_id, harasser)
    blocked = [recorded[0], recorded[2], recorded[3]]  # "gg" (the second) was delivered
    assert evidence.details["message_ids"] == ",".join(blocked)
    assert "go to hell bitch" in evidence.details["excerpts"]
    assert victim not in alert.subject_account_ids


async def test_a_spammer_is_flagged(
    game: GameHandle, antiabuse: RunningService, kafka_broker: Any
) -> None:
    game_id, spammer, _ = await table(game)
    # Three links refused (no solicitation: never adverts alone); a repeat refused too,
    # which is not counted.
    await chat(
        game,
        game_id,
        spammer,
        [
            "great deals at www.chipdeals.example",
            "more at www.chipshop.example",
            "hello there",
            "hello there",
            "and at www.chipsale.example",
        ],
    )
    alert = await alert_for(kafka_broker.bootstrap, spammer)
    assert alert.kind == antiabuse_events.ALERT_KIND_CHAT_ABUSE
    assert alert.severity == antiabuse_events.SEVERITY_MEDIUM
    assert [e.kind for e in alert.evidence] == ["spam_blocked"]
    assert alert.evidence[0].details["messages"] == "3"
    # Two different adverts refused, one soliciting: a campaign already.
    other_game, advertiser, _ = await table(game)
    await chat(
        game,
        other_game,
        advertiser,
        ["great deals at www.chipdeals.example", "selling cheap chips, add me on telegram"],
    )
    advert = await alert_for(kafka_broker.bootstrap, advertiser)
    assert advert.kind == antiabuse_events.ALERT_KIND_CHAT_ABUSE
    assert advert.severity == antiabuse_events.SEVERITY_MEDIUM
    assert [e.kind for e in advert.evidence] == ["spam_adverts"]
    assert advert.evidence[0].details["messages"] == "2"
    # One line, refused for soliciting on a messenger, and gone: an advert beyond doubt.
    third_game, one_liner, _ = await table(game)
    await chat(game, third_game, one_liner, ["cheap accounts for sale, telegram me"])
    single = await alert_for(kafka_broker.bootstrap, one_liner)
    assert single.severity == antiabuse_events.SEVERITY_LOW
    assert [e.kind for e in single.evidence] == ["spam_advert"]
    assert single.evidence[0].details["messages"] == "1"


async def test_consulting_and_ordinary_chat(
    game: GameHandle, antiabuse: RunningService, kafka_broker: Any
) -> None:
    game_id, consultant, _ = await table(game)
    await chat(
        game,
        game_id,
        consultant,
        ["what should I play at the other table?", "send me 4HPwATDgc/ABMA again"],
    )
    alert = await alert_for(kafka_broker.bootstrap, consultant)
    assert alert.kind == antiabuse_events.ALERT_KIND_COLLUSION
    assert alert.detector == "consulting" and alert.score == 2.0
    assert "4HPwATDgc/ABMA" in alert.evidence[0].details["excerpts"]

    quiet_game, first, second = await table(game)
    await chat(game, quiet_game, first, ["good luck and have fun", "nice roll", "gg"])
    await chat(game, quiet_game, second, ["thanks, you too", "what a lucky double six", "gg wp"])
    # All six are on the broker, then the facts consumer has gone past them: no alert.
    await support.read_topic(
        kafka_broker.bootstrap,
        "tavla.game.v1",
        chat_events_of({quiet_game}),
        lambda found: len(found) >= 6,
    )
    await support.all_consumed(kafka_broker.bootstrap, ("tavla.game.v1",))
    stub = antiabuse_pb2_grpc.AntiAbuseServiceStub(antiabuse.channel)
    for account in (first, second):
        listed = await stub.ListAlerts(
            antiabuse_pb2.ListAlertsRequest(account_id=account), metadata=support.officer()
        )
        assert list(listed.alerts) == []


async def lobby_chat(game: GameHandle, room: str, who: str, texts: Sequence[str]) -> None:
    """Post each text in a lobby room as ``who``, refused or not, below the rate limit."""
    for text in texts:
        try:
            await game.stub.PostLobbyMessage(
                game_pb2.PostLobbyMessageRequest(room=room, text=text), metadata=as_player(who)
            )
        except grpc.aio.AioRpcError as refused:
            assert refused.code() == grpc.StatusCode.FAILED_PRECONDITION, refused.details()
        CLOCK.advance(timedelta(seconds=3))


async def chat_lines_of(antiabuse: RunningService, account_id: str) -> list[tuple[str, ...]]:
    connection = await asyncpg.connect(antiabuse.settings.database_url.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT room, game_id, recipient, text, blocked_reasons FROM chat_lines"
            " WHERE account_id = $1 ORDER BY at",
            account_id,
        )
    finally:
        await connection.close()
    return [tuple(row.values()) for row in rows]


async def test_lobby_messages_are_kept_and_judged_with_table_chat(
    game: GameHandle, antiabuse: RunningService, kafka_broker: Any
) -> None:
    game_id, harasser, opponent = await table(game)
    await chat(game, game_id, harasser, ["you fucking idiot"])
    await lobby_chat(game, "USD", harasser, ["hello everyone", "what a l0ser, that one"])
    await lobby_chat(game, "PLAY", harasser, ["go to hell bitch"])
    alert = await alert_for(kafka_broker.bootstrap, harasser)
    assert alert.kind == antiabuse_events.ALERT_KIND_CHAT_ABUSE
    assert alert.severity == antiabuse_events.SEVERITY_MEDIUM and alert.score == 3.0
    (evidence,) = alert.evidence
    assert evidence.kind == "offensive_language" and list(evidence.game_ids) == [game_id]
    assert evidence.details["lobby_rooms"] == "USD,PLAY"
    assert "what a l0ser, that one" in evidence.details["excerpts"]
    # Every line kept, the lobby's with their room and no game or recipient.
    assert await chat_lines_of(antiabuse, harasser) == [
        ("", game_id, opponent, "you fucking idiot", "offensive_language"),
        ("USD", "", "", "hello everyone", ""),
        ("USD", "", "", "what a l0ser, that one", "offensive_language"),
        ("PLAY", "", "", "go to hell bitch", "offensive_language"),
    ]
