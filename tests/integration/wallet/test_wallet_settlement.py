"""Settlement from GameEnded / MatchEnded on real PostgreSQL, through the inbox consumer."""

from __future__ import annotations

from prometheus_client import REGISTRY
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from services.wallet.audit_cli import audit_database
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import events_pb2, wallet_pb2
from tests.support.wallet import (
    Side,
    Wallet,
    balance,
    fund,
    game_ended,
    held_for_game,
    match_ended,
    new_id,
)

GAMMON = game_pb2.RESULT_TYPE_GAMMON


def game_at(table: str) -> str:
    """The id of the game played at ``table`` (each test's table plays one)."""
    return f"g-at-{table}"


async def seated_pair(
    wallet: Wallet, funds: int, hold: int, currency: str = "USD"
) -> tuple[Side, Side, str]:
    """Two funded players sitting at one table with their stakes held and claimed for
    its game (``game_at(table)``), as matchmaking and the game leave them."""
    table = new_id("t")
    players = [new_id() for _ in range(2)]
    for player in players:
        await fund(wallet.stub, player, funds, currency)
    first, second = await held_for_game(wallet.stub, players, hold, table, game_at(table), currency)
    return first, second, table


async def house(wallet: Wallet, currency: str = "USD") -> int:
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            value = await connection.scalar(
                text(
                    "SELECT sum(credits - debits) FROM system_balance_shards WHERE account_id = :id"
                ),
                {"id": f"house_commission:{currency}"},
            )
    finally:
        await engine.dispose()
    return int(value or 0)  # sum() of bigint is numeric


async def outbox_settled(wallet: Wallet, game_id: str) -> list[events_pb2.Settled]:
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                text("SELECT payload FROM outbox WHERE ce_type = :t AND key = :k ORDER BY seq"),
                {"t": "tavla.wallet.v1.Settled", "k": game_id},
            )
            return [events_pb2.Settled.FromString(row.payload) for row in rows]
    finally:
        await engine.dispose()


async def test_single_game_example_end_to_end(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 2000, 1500)  # $5 x 1 x 3 held each
    house_before = await house(wallet)
    ended = game_ended(
        winner=winner,
        loser=loser,
        stake=500,
        cube=1,
        result=GAMMON,
        table_id=table,
        game_id=game_at(table),
    )
    assert await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, winner.player_id) == (2902, 0)  # gets $9.02
    assert await balance(wallet.stub, loser.player_id) == (1000, 0)  # pays $10.00
    assert await house(wallet) - house_before == 98
    [settled] = await outbox_settled(wallet, ended.game_id)
    assert settled.kind == wallet_pb2.SETTLEMENT_KIND_SINGLE_GAME
    assert settled.rate == "0.049"
    assert settled.schedule_version == "gammonempire-2026-01"
    assert (settled.winner_credit.minor_units, settled.loser_debit.minor_units) == (902, 1000)
    assert [p.commission.minor_units for p in settled.players] == [49, 49]
    assert [p.net.minor_units for p in settled.players] == [902, -1000]
    assert await audit_database(wallet.url) == ()


async def test_match_example_end_to_end(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 1500, 1000)
    ended = match_ended(
        winner=winner, loser=loser, stake=1000, length=3, table_id=table, game_id=game_at(table)
    )
    assert await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, winner.player_id) == (1500 + 882, 0)
    assert await balance(wallet.stub, loser.player_id) == (500, 0)
    [settled] = await outbox_settled(wallet, ended.game_id)
    assert (settled.kind, settled.rate) == (wallet_pb2.SETTLEMENT_KIND_SERIES, "0.059")
    assert settled.game_number == 0


async def test_a_duplicated_game_ended_settles_once(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 2000, 1500)
    ended = game_ended(
        winner=winner, loser=loser, stake=500, table_id=table, game_id=game_at(table)
    )
    assert await wallet.consumer.handle(ended, event_id="evt-dup-1")
    after_first = (
        await balance(wallet.stub, winner.player_id),
        await balance(wallet.stub, loser.player_id),
    )
    # The same event again: the inbox knows its id.
    assert not await wallet.consumer.handle(ended, event_id="evt-dup-1")
    # The same result republished under a new event id: the settlement id knows the game.
    assert await wallet.consumer.handle(ended, event_id="evt-dup-2")
    assert (
        await balance(wallet.stub, winner.player_id),
        await balance(wallet.stub, loser.player_id),
    ) == after_first
    assert after_first == ((2000 + 450, 0), (1500, 0))  # 4.9% of $5 = $0.245 -> $0.25 each
    assert len(await outbox_settled(wallet, ended.game_id)) == 1
    assert await audit_database(wallet.url) == ()


async def test_games_inside_a_match_wait_for_match_ended(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 1500, 1000)
    ended = game_ended(
        winner=winner, loser=loser, stake=1000, table_id=table, game_id=game_at(table)
    )
    ended.kind = game_pb2.PLAY_KIND_MATCH
    await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, winner.player_id) == (500, 1000)


async def test_a_disconnection_moves_only_the_share_difference(wallet: Wallet) -> None:
    first, second, table = await seated_pair(wallet, 1000, 300)  # $1 x 1 x 3
    ended = game_ended(
        winner=first,
        loser=second,
        stake=100,
        table_id=table,
        game_id=game_at(table),
        shares=[(first.player_id, "0.75"), (second.player_id, "0.25")],
    )
    assert await wallet.consumer.handle(ended)
    # Each put in $3.00; 75% of $6.00 is $4.50: $1.50 changes hands, 4.9% = $0.07 each.
    assert await balance(wallet.stub, first.player_id) == (1000 + 150 - 14, 0)
    assert await balance(wallet.stub, second.player_id) == (1000 - 150, 0)
    [settled] = await outbox_settled(wallet, ended.game_id)
    assert settled.disconnection
    assert [p.share for p in settled.players] == ["0.75", "0.25"]


async def test_play_money_pays_no_commission(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 5000, 3000, currency="PLAY")
    ended = game_ended(
        winner=winner, loser=loser, stake=1000, cube=2, currency="PLAY", table_id=table
    )
    assert await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, winner.player_id, "PLAY") == (7000, 0)
    assert await balance(wallet.stub, loser.player_id, "PLAY") == (3000, 0)


async def settlement_row(wallet: Wallet, game_id: str) -> tuple[str, str]:
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            row = (
                await connection.execute(
                    text("SELECT status, detail FROM settlements WHERE game_id = :g"),
                    {"g": game_id},
                )
            ).one()
    finally:
        await engine.dispose()
    return row.status, row.detail


def unbacked_refusals() -> float:
    labels = {"reason": "UNBACKED_SETTLEMENT"}
    return REGISTRY.get_sample_value("tavla_wallet_settlements_rejected_total", labels) or 0.0


async def test_a_real_money_seat_without_a_hold_is_never_debited_from_its_balance(
    wallet: Wallet,
) -> None:
    """A GameEnded naming players who hold nothing: their balances are not the stake."""
    victim, beneficiary = Side(new_id()), Side(new_id())
    await fund(wallet.stub, victim.player_id, 100_000)
    refused_before = unbacked_refusals()
    ended = game_ended(winner=beneficiary, loser=victim, stake=10_000, cube=4, result=GAMMON)
    assert await wallet.consumer.handle(ended)  # consumed, not retried forever
    assert await balance(wallet.stub, victim.player_id) == (100_000, 0)
    assert await balance(wallet.stub, beneficiary.player_id) == (0, 0)
    status, detail = await settlement_row(wallet, ended.game_id)
    assert status == "rejected"
    assert detail.startswith(f"UNBACKED_SETTLEMENT: game {ended.game_id} names no stake hold")
    assert unbacked_refusals() == refused_before + 1
    assert await audit_database(wallet.url) == ()


async def test_holds_not_claimed_for_the_game_do_not_pay_it(wallet: Wallet) -> None:
    """Holds at the table, but claimed for another game (or none): nothing moves."""
    winner, loser, table = await seated_pair(wallet, 5000, 1500)
    ended = game_ended(winner=winner, loser=loser, stake=500, table_id=table)  # another game
    assert await wallet.consumer.handle(ended)
    for side in (winner, loser):
        assert await balance(wallet.stub, side.player_id) == (3500, 1500)
    status, detail = await settlement_row(wallet, ended.game_id)
    assert status == "rejected"
    assert f"is bound to game {game_at(table)}, not to this one" in detail
    assert await audit_database(wallet.url) == ()


async def test_a_result_asking_more_than_was_held_moves_nothing(wallet: Wallet) -> None:
    """$5 x 1 x 3 held each; the event claims a backgammon at cube 64 ($960): refused, and
    the loser's large available balance is untouched."""
    winner, loser, table = await seated_pair(wallet, 200_000, 1500)
    ended = game_ended(
        winner=winner,
        loser=loser,
        stake=500,
        cube=64,
        result=game_pb2.RESULT_TYPE_BACKGAMMON,
        table_id=table,
        game_id=game_at(table),
    )
    assert await wallet.consumer.handle(ended)
    for side in (winner, loser):
        assert await balance(wallet.stub, side.player_id) == (198_500, 1500)
    status, detail = await settlement_row(wallet, ended.game_id)
    assert status == "rejected"
    assert f"asks {loser.player_id} to pay 960.00 USD but only 15.00 USD is held" in detail
    assert await audit_database(wallet.url) == ()


async def test_an_int64_stake_in_a_result_is_refused_without_stopping_the_consumer(
    wallet: Wallet,
) -> None:
    winner, loser, table = await seated_pair(wallet, 5000, 1500)
    huge = game_ended(
        winner=winner,
        loser=loser,
        stake=2**63 - 1,
        cube=64,
        result=game_pb2.RESULT_TYPE_BACKGAMMON,
        table_id=table,
        game_id=game_at(table),
    )
    assert await wallet.consumer.handle(huge)
    status, detail = await settlement_row(wallet, huge.game_id)
    assert (status, detail.split(":")[0]) == ("rejected", "INVALID_AMOUNT")
    # The same table's real result still settles afterwards.
    ended = game_ended(winner=winner, loser=loser, stake=500, table_id=table)
    ended.game_id, ended.game_number = huge.game_id, 2
    assert await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, winner.player_id) == (3500 + 1500 + 450, 0)
    assert await balance(wallet.stub, loser.player_id) == (3500 + 1000, 0)
    assert await audit_database(wallet.url) == ()


async def test_a_game_naming_someone_elses_hold_is_refused(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 2000, 1500)
    stranger, _, _ = await seated_pair(wallet, 2000, 1500)
    ended = game_ended(
        winner=winner,
        loser=Side(loser.player_id, hold_id=stranger.hold_id),
        stake=500,
        table_id=table,
        game_id=game_at(table),
    )
    assert await wallet.consumer.handle(ended)
    assert await balance(wallet.stub, loser.player_id) == (500, 1500)  # nothing moved
    assert await balance(wallet.stub, stranger.player_id) == (500, 1500)
    assert await audit_database(wallet.url) == ()


async def test_a_cancelled_game_gives_the_stakes_back_once(wallet: Wallet) -> None:
    first, second, table = await seated_pair(wallet, 2000, 1500)
    cancelled = game_events.GameCancelled(
        game_id=game_at(table),
        table_id=table,
        players=[first.message(), second.message()],
        reason="bob never arrived",
    )
    assert await wallet.consumer.handle(cancelled)
    assert await wallet.consumer.handle(cancelled)  # republished: nothing more to release
    for side in (first, second):
        assert await balance(wallet.stub, side.player_id) == (2000, 0)
    assert await audit_database(wallet.url) == ()


async def test_unreadable_results_are_consumed_without_moving_money(wallet: Wallet) -> None:
    winner, loser, table = await seated_pair(wallet, 2000, 1500)
    bad_share = game_ended(
        winner=winner,
        loser=loser,
        stake=500,
        table_id=table,
        game_id=game_at(table),
        shares=[(winner.player_id, "lots"), (loser.player_id, "0.1")],
    )
    bad_currency = game_ended(
        winner=winner, loser=loser, stake=500, table_id=table, game_id=game_at(table)
    )
    bad_currency.stake.currency = "DOGE"
    bad_cube = game_ended(
        winner=winner, loser=loser, stake=500, cube=3, table_id=table, game_id=game_at(table)
    )
    for ended in (bad_share, bad_currency, bad_cube):
        assert await wallet.consumer.handle(ended)  # consumed: never blocks the partition
    for side in (winner, loser):
        assert await balance(wallet.stub, side.player_id) == (500, 1500)
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            detail = await connection.scalar(
                text("SELECT detail FROM settlements WHERE game_id = :g"),
                {"g": bad_cube.game_id},
            )
    finally:
        await engine.dispose()
    assert detail.startswith("INVALID_SETTLEMENT: cube value 3")


async def test_holds_paid_out_once_pay_no_second_result_of_the_game(wallet: Wallet) -> None:
    """After the game settled from its holds, another result for it (another game number)
    finds nothing held and takes nothing from the balances."""
    winner, loser, table = await seated_pair(wallet, 200_000, 1500)
    first = game_ended(
        winner=winner, loser=loser, stake=500, table_id=table, game_id=game_at(table)
    )
    assert await wallet.consumer.handle(first)
    settled = (
        await balance(wallet.stub, winner.player_id),
        await balance(wallet.stub, loser.player_id),
    )
    assert settled == ((200_000 + 450, 0), (200_000 - 500, 0))
    second = game_ended(
        winner=winner, loser=loser, stake=500, table_id=table, game_id=game_at(table)
    )
    second.game_number = 2
    assert await wallet.consumer.handle(second)
    assert (
        await balance(wallet.stub, winner.player_id),
        await balance(wallet.stub, loser.player_id),
    ) == settled
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            detail = await connection.scalar(
                text("SELECT detail FROM settlements WHERE id = :id"),
                {"id": f"{game_at(table)}:2"},
            )
    finally:
        await engine.dispose()
    assert detail.startswith("UNBACKED_SETTLEMENT") and "paid out already" in detail
    assert await audit_database(wallet.url) == ()
