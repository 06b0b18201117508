"""`tavla bench wallet` says "holds": true only when every game of the run had both
stakes held, and raised by the double, in the wallet before its result was sent.

The figure counts only games whose money was really at stake: a game placed but not
raised, or never held at all, makes the flag false.
"""

from __future__ import annotations

import dataclasses
import uuid

from services.wallet.bench import (
    PLACED,
    every_game_held,
    hold_stakes,
    place_seat_hold,
    plan_games,
)
from tests.support.wallet import Wallet, fund, new_id


async def test_holds_is_true_only_when_every_game_had_both_stakes_held_and_raised(
    wallet: Wallet,
) -> None:
    players = [new_id("p") for _ in range(4)]
    for player in players:
        await fund(wallet.stub, player, 1_000_000)
    run_id = uuid.uuid4().hex[:8]
    held, placed_only, never_held = plan_games(players, 3, run_id)
    # The test channel calls PlaceHold as matchmaking and RaiseHold as game, as the bench does.
    held = await hold_stakes(wallet.stub, wallet.stub, held)
    placed_only = dataclasses.replace(
        placed_only,
        winner_hold=await place_seat_hold(
            wallet.stub, placed_only.winner, PLACED, placed_only.table_id, placed_only.game_id
        ),
        loser_hold=await place_seat_hold(
            wallet.stub, placed_only.loser, PLACED, placed_only.table_id, placed_only.game_id
        ),
    )

    assert await every_game_held(wallet.url, [held], run_id)
    assert not await every_game_held(wallet.url, [held, placed_only], run_id)  # not raised
    assert not await every_game_held(wallet.url, [held, never_held], run_id)
    other_run = uuid.uuid4().hex[:8]  # holds of another run's tables do not count for this one
    assert not await every_game_held(wallet.url, [held], other_run)
