"""PlaceHolds: a seating's holds in one call and one transaction, all placed or none.

Each hold is the one PlaceHold would place on its key, so replays (of the call, or of
a hold once placed alone) place nothing twice; one player who cannot have theirs
leaves every balance as it was, and the books stay sound (the audit) throughout.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine

from services.wallet.audit_cli import audit_database
from services.wallet.store.players import PlayerRepository
from tavla.wallet.v1 import wallet_pb2
from tests.support.wallet import Wallet, balance, fund, money, new_id, outbox_events

STAKE = 1500  # each seat's opening hold


def holds_for(
    table: str, seats: list[tuple[str, str]], amount: int = STAKE
) -> wallet_pb2.PlaceHoldsRequest:
    """(player, key) seats, each holding ``amount`` at ``table``."""
    return wallet_pb2.PlaceHoldsRequest(
        holds=[
            wallet_pb2.PlaceHoldRequest(
                account_id=player, amount=money(amount), table_id=table, idempotency_key=key
            )
            for player, key in seats
        ]
    )


async def funded(wallet: Wallet, *amounts: int) -> list[str]:
    players = []
    for amount in amounts:
        player = new_id()
        if amount:
            await fund(wallet.stub, player, amount)
        players.append(player)
    return players


async def test_both_holds_are_placed_in_one_call_and_a_replay_places_nothing_twice(
    wallet: Wallet,
) -> None:
    joiner, owner = await funded(wallet, 10_000, 2_000)
    table, attempt = new_id("t"), new_id("a")
    request = holds_for(table, [(joiner, f"{attempt}:1"), (owner, f"{attempt}:0")])
    placed = await wallet.stub.PlaceHolds(request)
    assert not placed.HasField("refused")
    assert [(h.account_id, h.table_id, h.amount.minor_units, h.status) for h in placed.holds] == [
        (joiner, table, STAKE, wallet_pb2.HOLD_STATUS_OPEN),
        (owner, table, STAKE, wallet_pb2.HOLD_STATUS_OPEN),
    ]
    again = await wallet.stub.PlaceHolds(request)  # the seating retried
    assert [h.hold_id for h in again.holds] == [h.hold_id for h in placed.holds]
    assert await balance(wallet.stub, joiner) == (10_000 - STAKE, STAKE)
    assert await balance(wallet.stub, owner) == (2_000 - STAKE, STAKE)
    for player in (joiner, owner):  # one HoldPlaced each, not two
        placed_events = [e for e in await outbox_events(wallet.url, player) if "HoldPlaced" in e]
        assert len(placed_events) == 1
    # A hold once placed alone (PlaceHold, the same key) is the same hold in a batch.
    alone = await wallet.stub.PlaceHold(request.holds[0])
    assert alone.hold_id == placed.holds[0].hold_id
    assert await audit_database(wallet.url) == ()


@pytest.mark.parametrize("short", [0, 1])
async def test_one_player_who_cannot_cover_is_named_and_nothing_is_held(
    wallet: Wallet, short: int
) -> None:
    amounts = [10_000, 10_000]
    amounts[short] = STAKE - 1  # a cent short
    players = await funded(wallet, *amounts)
    table, attempt = new_id("t"), new_id("a")
    answer = await wallet.stub.PlaceHolds(
        holds_for(table, [(p, f"{attempt}:{i}") for i, p in enumerate(players)])
    )
    assert answer.refused.index == short and answer.refused.account_id == players[short]
    assert "deposit 0.01 USD more" in answer.refused.reason
    assert list(answer.holds) == []
    for player, amount in zip(players, amounts, strict=True):  # the other's is not held either
        assert await balance(wallet.stub, player) == (amount, 0)
    assert await audit_database(wallet.url) == ()


async def test_a_refused_replay_names_the_holds_an_earlier_call_placed(wallet: Wallet) -> None:
    """A seating that placed the joiner's hold alone and died: its replay, refused on the
    owner's, lists the joiner's, which the seating then releases."""
    joiner, owner = await funded(wallet, 10_000, 0)
    table, attempt = new_id("t"), new_id("a")
    request = holds_for(table, [(joiner, f"{attempt}:1"), (owner, f"{attempt}:0")])
    earlier = await wallet.stub.PlaceHold(request.holds[0])
    answer = await wallet.stub.PlaceHolds(request)
    assert (answer.refused.index, answer.refused.account_id) == (1, owner)
    assert [h.hold_id for h in answer.holds] == [earlier.hold_id]
    assert await balance(wallet.stub, joiner) == (10_000 - STAKE, STAKE)
    assert await balance(wallet.stub, owner) == (0, 0)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("same account", "one hold per account"),
        ("no key", "idempotency_key is required"),
        ("no holds", "at least one hold"),
        ("currency", "XTS"),
    ],
)
async def test_a_malformed_batch_is_refused_whole_with_nothing_held(
    wallet: Wallet, change: str, problem: str
) -> None:
    joiner, owner = await funded(wallet, 10_000, 10_000)
    table, attempt = new_id("t"), new_id("a")
    request = holds_for(table, [(joiner, f"{attempt}:1"), (owner, f"{attempt}:0")])
    if change == "same account":
        request.holds[1].account_id = joiner
    elif change == "no key":
        request.holds[1].idempotency_key = ""
    elif change == "no holds":
        del request.holds[:]
    else:
        request.holds[1].amount.currency = "XTS"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await wallet.stub.PlaceHolds(request)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert problem in (caught.value.details() or "")
    for player in (joiner, owner):
        assert await balance(wallet.stub, player) == (10_000, 0)


async def test_a_player_row_another_transaction_creates_meanwhile_is_read_too(
    wallet: Wallet,
) -> None:
    """The players' rows are created and read in one statement; a row another transaction
    inserts while it waits is neither inserted nor seen by that statement's snapshot, so
    it is read again: every player asked for is answered."""
    racing, fresh = new_id(), new_id()
    now = datetime.now(UTC)
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as other:
            await other.execute(
                text(
                    "INSERT INTO players (player_id, self_excluded_indefinitely, updated_at) "
                    "VALUES (:id, false, now())"
                ),
                {"id": racing},
            )  # not committed yet: the read below waits on this row's insert
            async with AsyncSession(engine) as session:
                read = asyncio.create_task(
                    PlayerRepository(session).get_many([racing, fresh], now)
                )
                await asyncio.sleep(0.5)
                assert not read.done()
                await other.commit()
                states = await asyncio.wait_for(read, 10)
                await session.commit()
    finally:
        await engine.dispose()
    assert sorted(states) == sorted([racing, fresh])
    assert all(state.frozen_reason is None for state in states.values())
