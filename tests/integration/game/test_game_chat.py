"""Table chat end to end over gRPC on real PostgreSQL and the broker: delivery on
WatchGame, mute, moderation refusals, the rate limit, who may post, and the
compliance record (the chat_messages table and ChatMessagePosted on tavla.game.v1)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import grpc
import pytest

from services.kit.clock import ManualClock
from tavla.game.v1 import events_pb2, game_pb2
from tests.support.game import GameHandle, as_player, create_request, start_game_service
from tests.support.kafka import headers_of, keyed_records
from tests.support.services import new_database, stop_service

CLOCK = ManualClock()
POSTED = "tavla.game.v1.ChatMessagePosted"


@pytest.fixture(scope="module")
def game_database(postgres_server: Any) -> str:
    url: str = postgres_server.url(new_database(postgres_server, "game_chat"))
    return url


@pytest.fixture(scope="module")
async def game_service(game_database: str, kafka_broker: Any) -> AsyncIterator[GameHandle]:
    handle = await start_game_service(game_database, kafka_broker.bootstrap, CLOCK)
    yield handle
    await stop_service(handle.running)


async def new_game(handle: GameHandle) -> tuple[str, str, str]:
    game = await handle.stub.CreateGame(create_request())
    return game.game_id, game.players[0].account_id, game.players[1].account_id


async def post(handle: GameHandle, game_id: str, who: str, text: str) -> game_pb2.ChatMessage:
    request = game_pb2.PostChatMessageRequest(game_id=game_id, text=text)
    message: game_pb2.ChatMessage = await handle.stub.PostChatMessage(
        request, metadata=as_player(who)
    )
    CLOCK.advance(timedelta(seconds=3))  # keep clear of the rate limit unless a test wants it
    return message


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as error:
        await call
    return error.value


async def next_chat(stream: Any) -> game_pb2.ChatMessage:
    while True:
        update = await asyncio.wait_for(stream.read(), timeout=10)
        if update.event_type == POSTED:
            assert not update.HasField("game")
            chat: game_pb2.ChatMessage = update.chat
            return chat


async def stored(database_url: str, game_id: str) -> list[tuple[str, str, str, str]]:
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT text, status, reasons, muted_for FROM chat_messages"
            " WHERE game_id = $1 ORDER BY seq",
            game_id,
        )
    finally:
        await connection.close()
    return [(r["text"], r["status"], r["reasons"], r["muted_for"]) for r in rows]


async def chat_events(
    bootstrap: str, game_id: str, count: int
) -> list[events_pb2.ChatMessagePosted]:
    def posted(records: list[Any]) -> list[Any]:
        return [record for record in records if headers_of(record)["ce_type"] == POSTED]

    records = await keyed_records(
        bootstrap, "tavla.game.v1", game_id, lambda found: len(posted(found)) == count
    )
    return [events_pb2.ChatMessagePosted.FromString(r.value) for r in posted(records)]


async def test_a_message_reaches_the_opponents_stream_and_the_record(
    game_service: GameHandle, game_database: str, kafka_broker: Any
) -> None:
    game_id, alice, bob = await new_game(game_service)
    stream = game_service.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id), metadata=as_player(bob)
    )
    await stream.read()  # the snapshot
    sent = await post(game_service, game_id, alice, "  good   luck, have fun  ")
    assert sent.text == "good luck, have fun" and sent.seq == 1
    assert sent.status == game_pb2.CHAT_STATUS_DELIVERED and sent.display_name == "alice"

    received = await next_chat(stream)
    assert (received.message_id, received.account_id) == (sent.message_id, alice)
    assert received.text == "good luck, have fun"
    stream.cancel()

    # A stream opened later gets the history first, and resumes after a seq.
    await post(game_service, game_id, bob, "thanks, you too")
    later = game_service.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id, since_chat_seq=1), metadata=as_player(alice)
    )
    await later.read()
    assert (await next_chat(later)).text == "thanks, you too"
    later.cancel()

    (fact,) = await chat_events(kafka_broker.bootstrap, game_id, 1)
    assert (fact.account_id, fact.recipient_account_id) == (alice, bob)
    assert fact.message_id == sent.message_id and fact.status == game_pb2.CHAT_STATUS_DELIVERED
    assert list(fact.blocked_reasons) == [] and not fact.muted_by_recipient


async def test_a_muted_opponent_is_recorded_but_not_delivered(
    game_service: GameHandle, game_database: str, kafka_broker: Any
) -> None:
    game_id, alice, bob = await new_game(game_service)
    muted = await game_service.stub.MuteChat(
        game_pb2.MuteChatRequest(game_id=game_id, muted=True), metadata=as_player(bob)
    )
    assert muted.muted
    bob_stream = game_service.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id), metadata=as_player(bob)
    )
    alice_stream = game_service.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id), metadata=as_player(alice)
    )
    await bob_stream.read()
    await alice_stream.read()
    await post(game_service, game_id, alice, "you will never win this")
    assert (await next_chat(alice_stream)).text == "you will never win this"  # her own echo
    await game_service.stub.MuteChat(
        game_pb2.MuteChatRequest(game_id=game_id, muted=False), metadata=as_player(bob)
    )
    await post(game_service, game_id, alice, "ok sorry, good game")
    # Bob's stream skips the message posted while he muted her: the next one is the later one.
    assert (await next_chat(bob_stream)).text == "ok sorry, good game"
    bob_stream.cancel()
    alice_stream.cancel()

    assert await stored(game_database, game_id) == [
        ("you will never win this", "delivered", "", bob),
        ("ok sorry, good game", "delivered", "", ""),
    ]
    first, _ = await chat_events(kafka_broker.bootstrap, game_id, 2)
    assert first.muted_by_recipient and first.text == "you will never win this"


async def test_blocked_messages_are_refused_with_the_reason_and_recorded(
    game_service: GameHandle, game_database: str, kafka_broker: Any
) -> None:
    game_id, alice, bob = await new_game(game_service)
    cases = [
        ("you are a fucking idiot", "[offensive_language]"),
        ("visit www.chipdeals.example", "[link]"),
        ("add me on telegram, I sell chips", "[solicitation]"),
    ]
    for text, tag in cases:
        error = await refused(
            game_service.stub.PostChatMessage(
                game_pb2.PostChatMessageRequest(game_id=game_id, text=text),
                metadata=as_player(alice),
            )
        )
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert tag in (error.details() or "") and "not delivered" in (error.details() or "")
        CLOCK.advance(timedelta(seconds=3))
    await post(game_service, game_id, alice, "nice roll")
    repeated = await refused(
        game_service.stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text="Nice roll!"),
            metadata=as_player(alice),
        )
    )
    assert "[repetition]" in (repeated.details() or "")

    rows = await stored(game_database, game_id)
    assert [(status, reasons) for _, status, reasons, _ in rows] == [
        ("blocked", "offensive_language"),
        ("blocked", "link"),
        ("blocked", "solicitation"),
        ("delivered", ""),
        ("blocked", "repetition"),
    ]
    # Blocked messages never reach a stream: a late watcher sees only the delivered one.
    stream = game_service.stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id), metadata=as_player(bob)
    )
    await stream.read()
    assert (await next_chat(stream)).text == "nice roll"
    stream.cancel()
    facts = await chat_events(kafka_broker.bootstrap, game_id, 5)
    assert [list(f.blocked_reasons) for f in facts][:3] == [
        ["offensive_language"],
        ["link"],
        ["solicitation"],
    ]
    assert facts[0].status == game_pb2.CHAT_STATUS_BLOCKED


async def test_the_rate_limit_length_and_seats(
    game_service: GameHandle, game_database: str
) -> None:
    game_id, alice, bob = await new_game(game_service)
    stub = game_service.stub
    for n in range(5):  # five within ten seconds are fine
        await stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text=f"message number {n}"),
            metadata=as_player(alice),
        )
        CLOCK.advance(timedelta(seconds=1))
    sixth = await refused(
        stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text="one more"),
            metadata=as_player(alice),
        )
    )
    assert sixth.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "at most 5 every 10 seconds" in (sixth.details() or "")
    # The opponent has their own allowance; the refused message is not recorded.
    await post(game_service, game_id, bob, "slow down")
    assert len(await stored(game_database, game_id)) == 6
    CLOCK.advance(timedelta(seconds=10))
    await post(game_service, game_id, alice, "ok")

    too_long = await refused(
        stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text="a" * 281),
            metadata=as_player(alice),
        )
    )
    assert too_long.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at most 280 characters" in (too_long.details() or "")
    blank = await refused(
        stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text="   "),
            metadata=as_player(alice),
        )
    )
    assert blank.code() == grpc.StatusCode.INVALID_ARGUMENT

    stranger = str(uuid.uuid4())
    third = await refused(
        stub.PostChatMessage(
            game_pb2.PostChatMessageRequest(game_id=game_id, text="hello both"),
            metadata=as_player(stranger),
        )
    )
    assert third.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "only the two players seated" in (third.details() or "")
    mute = await refused(
        stub.MuteChat(
            game_pb2.MuteChatRequest(game_id=game_id, muted=True), metadata=as_player(stranger)
        )
    )
    assert mute.code() == grpc.StatusCode.PERMISSION_DENIED
    # A spectator reads the table's chat.
    watching = stub.WatchGame(
        game_pb2.WatchGameRequest(game_id=game_id, since_chat_seq=6),
        metadata=as_player(stranger),
    )
    await watching.read()
    assert (await next_chat(watching)).text == "ok"
    watching.cancel()
    assert len(await stored(game_database, game_id)) == 7


async def test_a_harassers_disguises_are_refused_and_table_talk_is_delivered(
    game_service: GameHandle, game_database: str
) -> None:
    """The messages a harasser got through before moderation read disguises."""
    game_id, alice, _ = await new_game(game_service)
    harassment = ["l0ser", "i d i o t", "id1ot", "cl0wn", "n00b", "visit my-site d0t c0m"]
    for text in harassment:
        error = await refused(
            game_service.stub.PostChatMessage(
                game_pb2.PostChatMessageRequest(game_id=game_id, text=text),
                metadata=as_player(alice),
            )
        )
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION, text
        details = error.details() or ""
        assert details.startswith("message not delivered: "), details
        assert "however they are" in details, details
        CLOCK.advance(timedelta(seconds=3))
    talk = ["nice hit", "double?", "gg", "what a roll", "next game?", "hello from Scunthorpe"]
    for text in talk:
        assert (await post(game_service, game_id, alice, text)).status == (
            game_pb2.CHAT_STATUS_DELIVERED
        )
    rows = await stored(game_database, game_id)
    assert [(text, status) for text, status, _, _ in rows] == [
        *((text, "blocked") for text in harassment),
        *((text, "delivered") for text in talk),
    ]
