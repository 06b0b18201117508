"""Two results of the same player applied at the same time, on the real PostgreSQL.

The first result's transaction holds the player's row; the second must wait for
it (seen in pg_stat_activity, not guessed by timing) and then read what it
wrote. Without the row lock the second would read 1500 and write 1510 over
the first's 1510: a lost update.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.kit.clock import SystemClock
from services.kit.db import make_engine
from services.matchmaking.ratings.recorder import RatingsRecorder
from services.matchmaking.ratings.results import MATCH, RatedResult
from tavla.game.v1 import game_pb2
from tests.support.ratings import new_player, query
from tests.support.services import migrated_database


def won(winner: str, loser: str) -> RatedResult:
    return RatedResult(
        game_id=new_player(),  # any fresh id
        game_number=MATCH,
        winner_id=winner,
        loser_id=loser,
        length=1,
        winner_share=None,
        reason=game_pb2.END_REASON_BORNE_OFF,
        occurred_at=datetime.now(UTC),
    )


async def wait_for_a_lock_wait(url: str) -> None:
    """Returns once some session of this database is waiting for a lock."""
    async with asyncio.timeout(60):
        while not await query(
            url,
            "SELECT 1 FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'",
        ):
            await asyncio.sleep(0.05)


async def apply_alone(
    sessions: async_sessionmaker[AsyncSession], recorder: RatingsRecorder, result: RatedResult
) -> None:
    async with sessions() as session, session.begin():
        await recorder.apply(session, result, f"event-{result.game_id}")


async def test_two_matches_of_one_player_ending_together_lose_no_update(
    postgres_server: Any,
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "ratings", "matchmaking"))
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    recorder = RatingsRecorder(SystemClock())
    xan, yul, zed = new_player(), new_player(), new_player()
    # Rows that exist already (a new player's row would make the second insert wait anyway).
    for player in (xan, yul, zed):
        await query(
            url,
            "INSERT INTO ratings (account_id, rating, experience, updated_at)"
            " VALUES ($1, 1500, 0, now())",
            player,
        )
    try:
        async with sessions() as first, first.begin():
            await recorder.apply(first, won(xan, yul), "event-first")
            second = asyncio.create_task(apply_alone(sessions, recorder, won(xan, zed)))
            await wait_for_a_lock_wait(url)
            assert not second.done()
        await second
    finally:
        await engine.dispose()

    # First: xan and yul new, +10/-10 (P = 1/2, K = 5, n = 1): xan 1510, experience 1.
    # Second, against what the first wrote: xan (1510, K = 5 - 1/100 = 4.99) beats zed
    # (1500, K = 5); D = 10: 10^(10/2000) = e^(0.005 * 2.3025851) = 1.0115795,
    # P_upset = 1/2.0115795 = 0.4971218; the favourite won: P = 0.4971218;
    # xan +4 * 4.99 * 0.4971218 = +9.922551, zed -4 * 5 * 0.4971218 = -9.942436.
    rows = {
        row["account_id"]: (row["rating"], row["experience"])
        for row in await query(url, "SELECT account_id, rating, experience FROM ratings")
    }
    assert rows[xan][0] == pytest.approx(1519.922551)
    assert rows[zed][0] == pytest.approx(1490.057564)
    assert rows[yul][0] == pytest.approx(1490.0)
    assert (rows[xan][1], rows[yul][1], rows[zed][1]) == (2, 1, 1)
    history = await query(
        url,
        "SELECT rating_before, rating_after FROM rating_changes WHERE account_id = $1 ORDER BY seq",
        xan,
    )
    # The second change starts where the first ended.
    assert [row["rating_before"] for row in history] == pytest.approx([1500.0, 1510.0])


async def test_the_same_pair_in_both_seat_orders_at_once_does_not_deadlock(
    postgres_server: Any,
) -> None:
    url = postgres_server.url(await migrated_database(postgres_server, "ratings", "matchmaking"))
    engine = make_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    recorder = RatingsRecorder(SystemClock())
    ann, bob = sorted((new_player(), new_player()))
    try:
        # bob's win names bob first; both lock ann's row before bob's, so one waits, none dies.
        await asyncio.gather(
            *(apply_alone(sessions, recorder, won(ann, bob)) for _ in range(5)),
            *(apply_alone(sessions, recorder, won(bob, ann)) for _ in range(5)),
        )
    finally:
        await engine.dispose()
    rows = await query(url, "SELECT experience FROM ratings ORDER BY account_id")
    assert [row["experience"] for row in rows] == [10, 10]
    assert len(await query(url, "SELECT 1 FROM rating_changes")) == 20
