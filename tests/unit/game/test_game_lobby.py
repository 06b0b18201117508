"""Lobby chat's pure rules: the rooms, the rate limit's count and refusal, page sizes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.game import lobby, moderation

NOW = datetime(2026, 12, 5, 14, 0, tzinfo=UTC)


def test_one_room_per_currency_the_site_plays_for() -> None:
    assert [(r.room, r.currency) for r in lobby.ROOMS] == [
        ("USD", "USD"), ("EUR", "EUR"), ("GBP", "GBP"), ("PLAY", "PLAY"),
    ]  # fmt: skip
    usd = lobby.room_named("USD")
    assert usd is not None and usd.title == "USD lobby"


def test_a_room_is_named_exactly() -> None:
    assert lobby.room_named("usd") is None
    assert lobby.room_named(" USD") is None
    assert lobby.room_named("") is None
    assert lobby.unknown_room("usd") == "no lobby room 'usd'; the rooms are USD, EUR, GBP, PLAY"


def test_the_lobby_limit_refuses_the_sixth_message_in_ten_seconds() -> None:
    limit = lobby.LOBBY_RATE
    assert limit.since(NOW) == NOW - timedelta(seconds=10)
    assert [limit.refusal(sent) is None for sent in range(7)] == [True] * 5 + [False] * 2
    assert limit.refusal(5) == (
        "too many chat messages in the lobby: at most 5 every 10 seconds; wait and try again"
    )


def test_table_chat_keeps_its_own_limit_and_words() -> None:
    assert moderation.TABLE_RATE.refusal(4) is None
    assert moderation.TABLE_RATE.refusal(5) == (
        "too many chat messages at the tables: at most 5 every 10 seconds; wait and try again"
    )


def test_page_sizes() -> None:
    assert lobby.page_size(0) == 50
    assert lobby.page_size(1) == 1
    assert lobby.page_size(100) == 100
    assert lobby.page_size(101) is None
    assert lobby.page_size(-1) is None


def test_a_mute_names_one_player_by_id_or_screen_name_never_the_caller() -> None:
    me, other = "a1", "b2"
    assert lobby.mute_target_problem(me, other, "") is None
    assert lobby.mute_target_problem(me, "", "Bob_7") is None
    neither_or_both = "name the player to mute by account_id or by screen_name (one of the two)"
    assert lobby.mute_target_problem(me, "", "") == neither_or_both
    assert lobby.mute_target_problem(me, "  ", " ") == neither_or_both
    assert lobby.mute_target_problem(me, other, "Bob_7") == neither_or_both
    assert lobby.mute_target_problem(me, me, "") == "you cannot mute yourself"
    assert lobby.mute_target_problem(me, f" {me} ", "") == "you cannot mute yourself"
    assert lobby.unknown_player("b2", "") == "no player with account b2 is known in the lobby"
    assert lobby.unknown_player("", " Bob_7") == (
        "no player with screen name 'Bob_7' is known in the lobby"
    )
