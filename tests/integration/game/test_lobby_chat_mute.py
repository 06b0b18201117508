"""Muting a player in the lobby, over REST through the real Envoy gateway (the dev config)
to the real game service on PostgreSQL and the broker: a player mutes another by account
id or by screen name, for themself only; the muted player's lines never reach the muting
player's streams (an open one, a new one, the history, the pages) while everyone else
still sees them, and they are still recorded and published (with how many had muted the
sender); the mute is stored, so it outlives the stream and the session, until lifted;
muting oneself, nobody or an unknown player is refused with a reason."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import httpx

from tavla.game.v1 import game_pb2
from tests.integration.game.test_lobby_chat_gateway import (  # noqa: F401  (fixtures)
    bearer,
    lobby_events,
    player,
    read_until,
    say,
    stack,
    supervisor,
)


async def sql(database_url: str, query: str, *args: Any) -> list[Any]:
    connection = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        return list(await connection.fetch(query, *args))
    finally:
        await connection.close()


async def mute(
    client: httpx.AsyncClient, who: str, muted: bool = True, **named: str
) -> httpx.Response:
    return await client.post(
        "/v1/lobby/chat:mute", json={**named, "muted": muted}, headers=bearer(who)
    )


async def texts_shown(client: httpx.AsyncClient, who: str) -> list[str]:
    page = await client.get("/v1/lobby/rooms/USD/messages", headers=bearer(who))
    assert page.status_code == 200, page.text
    return [m["text"] for m in page.json().get("messages", [])]


async def test_a_muted_players_lines_never_reach_the_player_who_muted_them(
    stack: tuple[str, str], kafka_broker: Any  # noqa: F811
) -> None:
    base_url, database = stack
    alice, bob, carol = player(), player(), player()
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        first = await say(client, bob, "hi all, bob here")
        assert first.status_code == 200, first.text
        muted = await mute(client, alice, accountId=bob)
        assert muted.status_code == 200, muted.text
        assert muted.json() == {"accountId": bob, "screenName": "", "muted": True}

        async with (
            client.stream("GET", "/v1/lobby/rooms/USD:watch", headers=bearer(alice)) as at_alice,
            client.stream("GET", "/v1/lobby/rooms/USD:watch", headers=bearer(carol)) as at_carol,
        ):
            hushed = await say(client, bob, "can anyone hear me?")
            assert hushed.status_code == 200, hushed.text  # delivered, as far as bob knows
            heard = await say(client, carol, "I can, bob")
            assert heard.status_code == 200, heard.text
            by_alice: list[str] = []
            by_carol: list[str] = []
            await read_until(at_alice, by_alice, "I can, bob")
            await read_until(at_carol, by_carol, "I can, bob")
        # carol's stream has bob's lines before hers; alice's has neither of bob's.
        assert "hi all, bob here" in "".join(by_carol)
        assert "can anyone hear me?" in "".join(by_carol)
        assert "bob here" not in "".join(by_alice) and "hear me" not in "".join(by_alice)

        # The mute is stored: a new session (a new token, a new stream, the pages) keeps it.
        assert await texts_shown(client, alice) == ["I can, bob"]
        assert await texts_shown(client, carol) == [
            "I can, bob", "can anyone hear me?", "hi all, bob here",
        ]  # fmt: skip
        mutes = await client.get("/v1/lobby/mutes", headers=bearer(alice))
        assert mutes.status_code == 200, mutes.text
        assert [m["accountId"] for m in mutes.json()["mutes"]] == [bob]
        assert (await client.get("/v1/lobby/mutes", headers=bearer(carol))).json() == {
            "mutes": []
        }
        rows = await sql(database, "SELECT account_id, muted_account_id FROM lobby_mutes")
        assert [(r["account_id"], r["muted_account_id"]) for r in rows] == [(alice, bob)]

        # Lifted: bob's lines reach alice again (the older ones too).
        lifted = await mute(client, alice, muted=False, accountId=bob)
        assert lifted.status_code == 200 and lifted.json()["muted"] is False, lifted.text
        back = await say(client, bob, "thanks for listening")
        assert back.status_code == 200, back.text
        async with client.stream(
            "GET", "/v1/lobby/rooms/USD:watch", headers=bearer(alice)
        ) as again:
            seen: list[str] = []
            await read_until(again, seen, "thanks for listening")
        assert "can anyone hear me?" in "".join(seen)
        assert (await client.get("/v1/lobby/mutes", headers=bearer(alice))).json() == {
            "mutes": []
        }

    # The muted line is still the room's record, delivered, with who had muted its sender.
    stored = await sql(
        database, "SELECT text, status FROM lobby_messages WHERE account_id = $1 ORDER BY seq",
        bob,
    )
    assert [(r["text"], r["status"]) for r in stored] == [
        ("hi all, bob here", "delivered"),
        ("can anyone hear me?", "delivered"),
        ("thanks for listening", "delivered"),
    ]
    ids = {first.json()["messageId"], hushed.json()["messageId"], back.json()["messageId"]}
    facts = await lobby_events(kafka_broker.bootstrap, ids)
    assert [(f.text, f.status, f.muted_by) for f in facts] == [
        ("hi all, bob here", game_pb2.CHAT_STATUS_DELIVERED, 0),
        ("can anyone hear me?", game_pb2.CHAT_STATUS_DELIVERED, 1),
        ("thanks for listening", game_pb2.CHAT_STATUS_DELIVERED, 0),
    ]


async def test_a_player_is_muted_by_screen_name_and_bad_requests_say_why(
    stack: tuple[str, str],  # noqa: F811
) -> None:
    base_url, database = stack
    alice, dave, nobody = player(), player(), str(uuid.uuid4())
    # Dave's name in the game's copy of accounts' screen names (its consumer's table).
    await sql(
        database, "INSERT INTO screen_names (account_id, screen_name, said_at) VALUES ($1, $2, $3)",
        dave, "Dave_Mute7", datetime.now(UTC),
    )  # fmt: skip
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        by_name = await mute(client, alice, screenName="dave_mute7")
        assert by_name.status_code == 200, by_name.text
        assert by_name.json() == {"accountId": dave, "screenName": "Dave_Mute7", "muted": True}
        listed = await client.get("/v1/lobby/mutes", headers=bearer(alice))
        assert listed.json()["mutes"] == [
            {"accountId": dave, "screenName": "Dave_Mute7", "muted": True}
        ]
        again = await mute(client, alice, accountId=dave)  # muting twice changes nothing
        assert again.status_code == 200, again.text
        listed = await client.get("/v1/lobby/mutes", headers=bearer(alice))
        assert len(listed.json()["mutes"]) == 1

        refusals = {
            "self": await mute(client, alice, accountId=alice),
            "self by name": await mute(client, dave, screenName="Dave_Mute7"),
            "nobody": await mute(client, alice),
            "both": await mute(client, alice, accountId=dave, screenName="Dave_Mute7"),
            "unknown id": await mute(client, alice, accountId=nobody),
            "unknown name": await mute(client, alice, screenName="No_Such_Player"),
        }
        answers = {k: (r.status_code, r.json()["message"]) for k, r in refusals.items()}
        one_of_two = "name the player to mute by account_id or by screen_name (one of the two)"
        assert answers == {
            "self": (400, "you cannot mute yourself"),
            "self by name": (400, "you cannot mute yourself"),
            "nobody": (400, one_of_two),
            "both": (400, one_of_two),
            "unknown id": (404, f"no player with account {nobody} is known in the lobby"),
            "unknown name": (
                404, "no player with screen name 'No_Such_Player' is known in the lobby"
            ),
        }  # fmt: skip
        for refused in refusals.values():
            assert refused.json()["code"] in (3, 5)  # INVALID_ARGUMENT, NOT_FOUND

        anonymous = await client.post("/v1/lobby/chat:mute", json={"accountId": dave})
        assert anonymous.status_code == 401
        assert (await client.get("/v1/lobby/mutes")).status_code == 401
    rows = await sql(database, "SELECT account_id, muted_account_id FROM lobby_mutes")
    assert [(r["account_id"], r["muted_account_id"]) for r in rows] == [(alice, dave)]
