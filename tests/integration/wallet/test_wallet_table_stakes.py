"""A table-stakes game settled from GameEnded on real PostgreSQL, through the consumer.

$1.00 a point (100 cents), $3.00 (300) held by each player and claimed for the game, 300
at risk. The winner wins a backgammon at cube 2, which the cap counts as a single game
(100 x 2 x 2 = 400 > 300): W = 200, 4.9% = 9.8 -> 10 cents per player, so the loser's
hold goes 300 -> 100 and the winner's 300 -> 480, and neither available balance moves.
"""

from __future__ import annotations

from services.wallet.audit_cli import audit_database
from tavla.game.v1 import game_pb2
from tests.integration.wallet.test_wallet_settlement import house, outbox_settled
from tests.support.wallet import (
    Wallet,
    balance,
    claim_holds,
    fund,
    game_ended,
    held_for_game,
    new_id,
)


async def test_a_table_stakes_game_moves_held_money_once_and_keeps_the_holds(
    wallet: Wallet,
) -> None:
    table, game_id = new_id("t"), new_id("g")
    players = [new_id() for _ in range(2)]
    for player in players:
        await fund(wallet.stub, player, 1_000)
    winner, loser = await held_for_game(wallet.stub, players, 300, table, game_id)
    house_before = await house(wallet)
    ended = game_ended(
        winner=winner,
        loser=loser,
        stake=100,
        cube=2,
        result=game_pb2.RESULT_TYPE_BACKGAMMON,
        table_id=table,
        game_id=game_id,
    )
    ended.table_stakes_at_risk_minor_units = 300
    assert await wallet.consumer.handle(ended, event_id=new_id("evt"))
    # The same result under another event id moves nothing: the record knows the game.
    assert await wallet.consumer.handle(ended, event_id=new_id("evt"))
    assert await balance(wallet.stub, winner.player_id) == (700, 480)
    assert await balance(wallet.stub, loser.player_id) == (700, 100)
    assert await house(wallet) - house_before == 20
    [settled] = await outbox_settled(wallet, game_id)
    assert settled.table_stakes and settled.win_sum.minor_units == 200
    assert [p.commission.minor_units for p in settled.players] == [10, 10]
    assert [p.table_stake_left_minor_units for p in settled.players] == [480, 100]
    # The holds are open and free for the table's next game, capped at the 100 left.
    await claim_holds(wallet.stub, table, new_id("g"), [winner, loser], 100)
    assert await audit_database(wallet.url) == ()
