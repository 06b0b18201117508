"""Lobby chat, pure: the rooms, the lobby's rate limit and the page sizes of its history.

The lobby has one room per currency the site plays for (the house rules: "Chatting at
the tables and in the lobby is only permitted in English"; moderation is table chat's,
:mod:`services.game.moderation`). The rooms are data: adding one is a line here. A room's
id is what paths name (``/v1/lobby/rooms/USD/messages``), matched exactly (upper case),
so one room never has two spellings in the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from services.game.moderation import RateLimit


@dataclass(frozen=True)
class Room:
    room: str
    title: str
    currency: str


ROOMS: tuple[Room, ...] = (
    Room("USD", "USD lobby", "USD"),
    Room("EUR", "EUR lobby", "EUR"),
    Room("GBP", "GBP lobby", "GBP"),
    Room("PLAY", "Play-money lobby", "PLAY"),
)
_BY_ID = {room.room: room for room in ROOMS}

# The lobby is read by everyone in it: a player may post as often as at a table (5 in
# 10 s), counted over every room, apart from table chat's own count.
LOBBY_RATE = RateLimit(5, timedelta(seconds=10), "in the lobby")
HISTORY = 100  # messages a new stream starts with, at most
DEFAULT_PAGE = 50
MAX_PAGE = 100


def room_named(room: str) -> Room | None:
    """The room with this id, or None."""
    return _BY_ID.get(room)


def unknown_room(room: str) -> str:
    """What a caller naming no room of the lobby reads."""
    known = ", ".join(r.room for r in ROOMS)
    return f"no lobby room {room!r}; the rooms are {known}"


def page_size(asked: int) -> int | None:
    """The page size to use for ``asked`` (0: the default), or None when out of range."""
    if asked == 0:
        return DEFAULT_PAGE
    return asked if 1 <= asked <= MAX_PAGE else None


def mute_target_problem(caller: str, account_id: str, screen_name: str) -> str | None:
    """Why a mute request names nobody to mute (or the caller), or None. The player is
    named by account id or by screen name, exactly one of the two."""
    by_id, by_name = account_id.strip(), screen_name.strip()
    if bool(by_id) == bool(by_name):
        return "name the player to mute by account_id or by screen_name (one of the two)"
    if by_id == caller:
        return "you cannot mute yourself"
    return None


def unknown_player(account_id: str, screen_name: str) -> str:
    """What a caller naming a player the game does not know reads."""
    named = f"account {account_id.strip()}" if account_id.strip() else (
        f"screen name {screen_name.strip()!r}"
    )
    return f"no player with {named} is known in the lobby"
