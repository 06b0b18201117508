"""Lobby chat over REST through the real Envoy gateway (the dev config) to the real game
service on PostgreSQL and the broker: two players chat in the USD room and both see
every message on their watch streams; offensive language (disguised too), links and a
flood are refused and never reach a stream; the record keeps what moderation blocked;
an anonymous caller never reaches the service; LobbyMessagePosted goes on tavla.game.v1."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx
import pytest

from services.kit.clock import ManualClock
from services.kit.devstack.keys import PRIVATE_KEY_FILE
from services.kit.devstack.supervisor import Supervisor
from tavla.game.v1 import events_pb2, game_pb2
from tests.support.game import start_game_service
from tests.support.gateway import envoy_in_front
from tests.support.identity import PLAYER_KEY_FILE, player_token
from tests.support.kafka import headers_of, keyed_records
from tests.support.services import new_database, stop_service

CLOCK = ManualClock()
POSTED = "tavla.game.v1.LobbyMessagePosted"


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    with Supervisor(tmp_path / "logs", stop_timeout=3) as owner:
        yield owner


@pytest.fixture
async def stack(
    tmp_path: Path, supervisor: Supervisor, postgres_server: Any, kafka_broker: Any
) -> AsyncIterator[tuple[str, str]]:
    """The gateway's base URL and the game database's URL."""
    database = postgres_server.url(new_database(postgres_server, "lobby_chat"))
    game = await start_game_service(database, kafka_broker.bootstrap, CLOCK)
    shutil.copy(PLAYER_KEY_FILE, tmp_path / PRIVATE_KEY_FILE)  # the JWKS of accounts' key
    try:
        async with envoy_in_front(
            tmp_path, supervisor, {"game": game.running.settings.grpc_port}
        ) as base_url:
            yield base_url, database
    finally:
        await stop_service(game.running)


def bearer(account: str) -> dict[str, str]:
    return {"authorization": f"Bearer {player_token(account, residence='MT')}"}


def player() -> str:
    return str(uuid.uuid4())


async def say(client: httpx.AsyncClient, who: str, text: str, room: str = "USD") -> httpx.Response:
    answer = await client.post(
        f"/v1/lobby/rooms/{room}/messages", json={"text": text}, headers=bearer(who)
    )
    CLOCK.advance(timedelta(seconds=3))  # clear of the rate limit unless a test wants it
    return answer


async def read_until(response: httpx.Response, seen: list[str], words: str) -> str:
    """Reads the stream into ``seen`` until what it has sent contains ``words``."""
    async with asyncio.timeout(30):
        async for chunk in response.aiter_text():
            seen.append(chunk)
            if words in "".join(seen):
                return "".join(seen)
    raise AssertionError(f"the stream ended without {words!r}: {''.join(seen)}")


async def stored(database_url: str, account_id: str) -> list[tuple[str, str, str, str]]:
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        rows = await connection.fetch(
            "SELECT room, text, status, reasons FROM lobby_messages"
            " WHERE account_id = $1 ORDER BY posted_at",
            account_id,
        )
    finally:
        await connection.close()
    return [(r["room"], r["text"], r["status"], r["reasons"]) for r in rows]


async def lobby_events(
    bootstrap: str, message_ids: set[str]
) -> list[events_pb2.LobbyMessagePosted]:
    def facts(records: list[Any]) -> list[events_pb2.LobbyMessagePosted]:
        posted = [r for r in records if headers_of(r)["ce_type"] == POSTED]
        return [events_pb2.LobbyMessagePosted.FromString(r.value) for r in posted]

    def complete(records: list[Any]) -> bool:
        return message_ids <= {f.message_id for f in facts(records)}

    records = await keyed_records(bootstrap, "tavla.game.v1", "USD", complete)
    return [f for f in facts(records) if f.message_id in message_ids]


async def test_two_players_chat_in_the_usd_lobby_and_both_see_it(
    stack: tuple[str, str], kafka_broker: Any
) -> None:
    base_url, _ = stack
    alice, bob = player(), player()
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        rooms = await client.get("/v1/lobby/rooms", headers=bearer(alice))
        assert rooms.status_code == 200, rooms.text
        assert [r["room"] for r in rooms.json()["rooms"]] == ["USD", "EUR", "GBP", "PLAY"]
        async with (
            client.stream("GET", "/v1/lobby/rooms/USD:watch", headers=bearer(alice)) as at_alice,
            client.stream("GET", "/v1/lobby/rooms/USD:watch", headers=bearer(bob)) as at_bob,
        ):
            assert (at_alice.status_code, at_bob.status_code) == (200, 200)
            first = await say(client, alice, "  anyone up for a   5 point match?  ")
            assert first.status_code == 200, first.text
            sent = first.json()
            assert sent["text"] == "anyone up for a 5 point match?" and sent["accountId"] == alice
            assert sent["room"] == "USD" and sent["status"] == "CHAT_STATUS_DELIVERED"
            reply = await say(client, bob, "sure, open a table")
            assert reply.status_code == 200, reply.text
            by_alice, by_bob = [], []
            await read_until(at_alice, by_alice, "sure, open a table")
            await read_until(at_bob, by_bob, "sure, open a table")
        for seen in ("".join(by_alice), "".join(by_bob)):
            assert seen.index("5 point match") < seen.index("sure, open a table")
            assert sent["messageId"] in seen and reply.json()["messageId"] in seen

        # A later reader pages the history, newest first; another room is empty.
        page = await client.get("/v1/lobby/rooms/USD/messages?pageSize=1", headers=bearer(bob))
        assert page.status_code == 200, page.text
        assert [m["text"] for m in page.json()["messages"]] == ["sure, open a table"]
        older = page.json()["nextBeforeSeq"]
        page = await client.get(
            f"/v1/lobby/rooms/USD/messages?beforeSeq={older}", headers=bearer(bob)
        )
        assert [m["text"] for m in page.json()["messages"]] == ["anyone up for a 5 point match?"]
        eur = await client.get("/v1/lobby/rooms/EUR/messages", headers=bearer(bob))
        assert eur.status_code == 200 and eur.json().get("messages", []) == []

    facts = await lobby_events(
        kafka_broker.bootstrap, {sent["messageId"], reply.json()["messageId"]}
    )
    assert [(f.account_id, f.text, f.status) for f in facts] == [
        (alice, "anyone up for a 5 point match?", game_pb2.CHAT_STATUS_DELIVERED),
        (bob, "sure, open a table", game_pb2.CHAT_STATUS_DELIVERED),
    ]


async def test_moderation_refuses_what_table_chat_refuses_and_keeps_the_record(
    stack: tuple[str, str], kafka_broker: Any
) -> None:
    base_url, database = stack
    troll, reader = player(), player()
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        async with client.stream(
            "GET", "/v1/lobby/rooms/USD:watch", headers=bearer(reader)
        ) as stream:
            refusals = {}
            for text in ("you are all idiots", "what a l0ser", "chips at cheapchips dot com"):
                answer = await say(client, troll, text)
                assert answer.status_code == 400, answer.text  # FAILED_PRECONDITION
                refusals[text] = answer.json()["message"]
            fine = await say(client, troll, "sorry, good luck all")
            assert fine.status_code == 200, fine.text
            seen: list[str] = []
            await read_until(stream, seen, "sorry, good luck all")
        assert not any(word in "".join(seen) for word in ("idiots", "l0ser", "cheapchips"))
    assert "[offensive_language]" in refusals["you are all idiots"]
    assert "[offensive_language]" in refusals["what a l0ser"]
    assert refusals["chips at cheapchips dot com"].endswith("[link]")
    assert refusals["what a l0ser"].startswith("message not delivered: offensive language")

    assert await stored(database, troll) == [
        ("USD", "you are all idiots", "blocked", "offensive_language"),
        ("USD", "what a l0ser", "blocked", "offensive_language"),
        ("USD", "chips at cheapchips dot com", "blocked", "link"),
        ("USD", "sorry, good luck all", "delivered", ""),
    ]
    message_ids = {fine.json()["messageId"]}
    facts = await lobby_events(kafka_broker.bootstrap, message_ids)
    assert [f.status for f in facts] == [game_pb2.CHAT_STATUS_DELIVERED]


async def test_the_rate_limit_unknown_rooms_and_anonymous_callers(
    stack: tuple[str, str],
) -> None:
    base_url, database = stack
    chatty = player()
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        for n in range(5):  # five in ten seconds, across rooms
            answer = await client.post(
                f"/v1/lobby/rooms/{'USD' if n % 2 else 'PLAY'}/messages",
                json={"text": f"message number {n}"}, headers=bearer(chatty),
            )  # fmt: skip
            assert answer.status_code == 200, answer.text
            CLOCK.advance(timedelta(seconds=1))
        sixth = await client.post(
            "/v1/lobby/rooms/USD/messages", json={"text": "one more"}, headers=bearer(chatty)
        )
        assert sixth.status_code == 429, sixth.text
        assert sixth.json()["message"] == (
            "too many chat messages in the lobby: at most 5 every 10 seconds; wait and try again"
        )
        assert len(await stored(database, chatty)) == 5  # the refused one is not recorded
        CLOCK.advance(timedelta(seconds=10))
        again = await say(client, chatty, "one more")
        assert again.status_code == 200, again.text

        unknown = await say(client, chatty, "hello", room="usd")
        assert unknown.status_code == 404 and "the rooms are USD, EUR, GBP, PLAY" in unknown.text
        async with client.stream(
            "GET", "/v1/lobby/rooms/Lounge:watch", headers=bearer(chatty)
        ) as stream:
            assert stream.status_code == 404
        long = await say(client, chatty, "a" * 300)
        assert long.status_code == 400 and "at most 280 characters" in long.text
        empty = await say(client, chatty, "   ")
        assert empty.status_code == 400 and "cannot be empty" in empty.text

        anonymous = await client.post("/v1/lobby/rooms/USD/messages", json={"text": "hi"})
        assert anonymous.status_code == 401
        watching = await client.get("/v1/lobby/rooms/USD/messages")
        assert watching.status_code == 401
        async with client.stream("GET", "/v1/lobby/rooms/USD:watch") as stream:
            assert stream.status_code == 401
    assert "hi" not in [text for _, text, _, _ in await stored(database, chatty)]
