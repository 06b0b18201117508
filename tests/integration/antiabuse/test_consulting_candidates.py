"""Consulting's candidates read the other way round (real PostgreSQL): first the accounts
whose games overlapped, then which of them the links join, against the old reads of the
whole component filtered afterwards (a second implementation):

- on random worlds of sightings (devices, mailboxes, cards, addresses and networks, shared
  at random times, so that windows, shared computers and turns at them all count),
  :meth:`MultiAccounting.joined` answers for any candidates exactly what
  :meth:`MultiAccounting.linked` and :meth:`MultiAccounting.one_person` answer for them,
  the worlds small enough that those read their components whole;
- in a carrier's NAT larger than a component read whole (300 accounts on one /64, a
  chain of addresses beyond it), the candidates the NAT joins are found, and a stranger
  elsewhere is not;
- on random game windows (finished, running, long ended without an end, ends in either
  order), :meth:`PlayFacts.overlapping_accounts` holds every account whose windows
  :func:`consulting_play.overlapping` finds against the account's, as read before;
- migration 0018 adds the windows' index over the windows kept before it (a window whose
  end came before its start included), and downgrading drops it.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.antiabuse.detectors.multi_accounting import MultiAccounting
from services.antiabuse.domain import consulting_play
from services.antiabuse.domain.signals import Signal, SignalKind
from services.antiabuse.play_store import PlayFacts
from services.antiabuse.store import MAX_COMPONENT, Facts, Seen
from services.kit.db import make_engine
from tests.support.services import migrate_step, migrated_sessions, new_database

Sessions = async_sessionmaker[AsyncSession]
NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)


@pytest.fixture
async def sessions(postgres_server: Any) -> AsyncIterator[Sessions]:
    async with migrated_sessions(postgres_server, "candidates", "antiabuse") as sessions:
        yield sessions


def world(rng: random.Random, prefix: str, size: int) -> list[Seen]:
    """``size`` accounts, each seen with a few identifiers drawn from small pools, from a
    random time over three weeks for up to three days (each use reported at both ends)."""
    pools = {
        SignalKind.DEVICE: [f"dev-{i}" for i in range(size // 3)],
        SignalKind.EMAIL: [f"mail-{i}" for i in range(size)],
        SignalKind.PAYMENT: [f"card-{i}" for i in range(size // 2)],
        SignalKind.ADDRESS: [f"81.2.{i}.7" for i in range(size // 3)],
        SignalKind.NETWORK: [f"81.3.{i}.0/24" for i in range(size // 6)],
        SignalKind.NAME: [f"name{i}" for i in range(size // 4)],
    }
    seen: list[Seen] = []
    for n in range(size):
        account = f"{prefix}-{n:03d}"
        for kind in rng.sample(sorted(pools), rng.randint(1, 4)):
            first = NOW - timedelta(days=rng.uniform(0, 21))
            last = first + timedelta(hours=rng.choice([0, 0.02, 1, 30, 72]))
            signal = (Signal(kind, f"{prefix}/{rng.choice(pools[kind])}"),)
            seen += [Seen(account, signal, first), Seen(account, signal, last)]
    return seen


async def test_joined_answers_what_the_whole_component_answered(sessions: Sessions) -> None:
    rng = random.Random(1712001)
    linking = MultiAccounting()
    asked = linked_found = person_found = 0
    for w in range(12):
        prefix = f"w{w}"
        size = rng.randint(20, 90)
        async with sessions() as session, session.begin():
            await Facts(session).seen_all(world(rng, prefix, size))
        accounts = [f"{prefix}-{n:03d}" for n in range(size)]
        async with sessions() as session:
            facts = Facts(session)
            for _ in range(8):
                account = rng.choice(accounts)
                candidates = set(rng.sample(accounts, rng.randint(1, size // 2)))
                linked = await linking.linked(facts, account)
                person = await linking.one_person(facts, account)
                assert len(linked) < MAX_COMPONENT  # read whole: the old answer is exact
                got = await linking.joined(facts, account, candidates)
                wanted = candidates - {account}
                assert got == (linked & wanted, person & wanted), (account, sorted(candidates))
                asked += 1
                linked_found += bool(got[0])
                person_found += bool(got[1])
    # The worlds hold both answers, not only empty ones.
    assert asked == 96 and linked_found >= 40 and person_found >= 10


async def test_a_nat_beyond_the_components_bound(sessions: Sessions) -> None:
    """300 accounts on one /64 within a week: :meth:`linked` reads 200 of them, in order of
    id; the search finds the candidates the NAT joins wherever they sort, through a chain
    of exact addresses beyond it too, and leaves a stranger out."""
    nat = [f"nat-{n:03d}" for n in range(300)]
    seen = [Seen(a, (Signal(SignalKind.NETWORK, "2a02:1:2:3::/64"),),
                 NOW - timedelta(hours=n % 100)) for n, a in enumerate(nat)]  # fmt: skip
    chain = [f"zz-chain-{n}" for n in range(5)]  # a home address each, handed along
    for n, a in enumerate(chain):
        home = nat[-1] if n == 0 else chain[n - 1]
        address = Signal(SignalKind.ADDRESS, f"81.9.9.{n}")
        seen += [Seen(home, (address,), NOW), Seen(a, (address,), NOW)]
    seen.append(Seen("zz-stranger", (Signal(SignalKind.ADDRESS, "82.1.1.1"),), NOW))
    async with sessions() as session, session.begin():
        await Facts(session).seen_all(seen)
    async with sessions() as session:
        facts = Facts(session)
        linking = MultiAccounting()
        old = await linking.linked(facts, nat[0])
        assert nat[-1] not in old and chain[-1] not in old  # cut at the bound, by id
        candidates = {nat[5], nat[-1], chain[-1], "zz-stranger"}
        linked, person = await linking.joined(facts, nat[0], candidates)
        assert linked == {nat[5], nat[-1], chain[-1]} and person == set()


WindowRow = tuple[str, str, int, datetime, datetime | None]  # game, account, number, ends


def windows_world(rng: random.Random, accounts: list[str]) -> list[WindowRow]:
    """120 games over 30 hours (so some not ended are running and some long lost)."""
    rows: list[WindowRow] = []
    for g in range(120):
        game = f"g-{g}"
        start = NOW - timedelta(hours=rng.uniform(0, 30))
        end: datetime | None = start + timedelta(minutes=rng.uniform(0, 90))
        shape = rng.random()
        if shape < 0.1:
            end = None  # running (or long lost, when started over 12 hours ago)
        elif shape < 0.15:
            end = start - timedelta(minutes=rng.uniform(0, 5))  # ends in the other order
        elif shape < 0.2:
            end = start  # no length
        for account in rng.sample(accounts, 2):
            for number in range(1, rng.choice([1, 1, 2]) + 1):
                rows.append((game, account, number, start + timedelta(minutes=number), end))
    return rows


async def test_overlapping_accounts_hold_every_overlap(sessions: Sessions) -> None:
    rng = random.Random(1712002)
    accounts = [f"p-{n:02d}" for n in range(30)]
    rows = windows_world(rng, accounts)
    async with sessions() as session, session.begin():
        facts = PlayFacts(session)
        for game, account, number, start, end in rows:
            await facts.started(game, number, [account], start)
            if end is not None:
                await facts.ended(game, number, [account], end)
    found = 0
    async with sessions() as session:
        facts = PlayFacts(session)
        for account in accounts:
            own = await facts.windows(account)
            others = [a for a in accounts if a != account]
            windows = await facts.windows_of(others)
            running = await facts.running_of(others, NOW)
            overlapping = {
                a for a in others if consulting_play.overlapping(own, windows[a] + running[a])
            }
            got = await facts.overlapping_accounts(account, NOW)
            assert overlapping <= set(got), account
            assert all(n >= 1 for n in got.values())
            found += len(overlapping)
    assert found >= 100


async def test_the_migration_indexes_the_windows_kept(postgres_server: Any) -> None:
    url = postgres_server.url(new_database(postgres_server, "antiabuse_windows"))
    await migrate_step("antiabuse", url, "up", "0017")
    engine = make_engine(url)
    index = text("SELECT count(*) FROM pg_indexes WHERE indexname = 'game_windows_by_time'")
    try:
        async with engine.begin() as connection:
            await connection.execute(text(
                "INSERT INTO game_windows VALUES ('g1', 1, 'a', :at, :at + interval '1 hour'), "
                "('g2', 1, 'b', :at, :at - interval '1 minute'), ('g3', 1, 'c', :at, NULL), "
                "('g4', 1, 'd', NULL, :at)").bindparams(at=NOW))  # fmt: skip
        await migrate_step("antiabuse", url, "up", "0018")
        async with engine.connect() as connection:
            assert await connection.scalar(index) == 1
            found = await PlayFacts(AsyncSession(bind=connection)).overlapping_accounts(
                "a", NOW + timedelta(minutes=5))
            # b's ends in the other order touch a's start (held: the overlap test decides);
            # c is running; d has no start: not a window.
            assert found == {"b": 1, "c": 1}
        await migrate_step("antiabuse", url, "down", "0017")
        async with engine.connect() as connection:
            assert await connection.scalar(index) == 0
    finally:
        await engine.dispose()
