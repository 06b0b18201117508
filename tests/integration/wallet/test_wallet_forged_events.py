"""Events that move money or freeze people are believed only when their producer is proven.

Written straight to the real broker with aiokafka, as anyone who can reach it could:
a GameEnded with no signature, and one signed with another service's key (the
analysis service's, which does not own ``tavla.game.v1``), each paying the loser
of a real game; an AccountSanctioned freezing a player, unsigned and signed by
analysis. The running wallet parks each of them (reason ``signature``) and moves no
money and freezes nobody; the genuine event after each (signed by the game or the
anti-abuse service, as their relays sign) is applied.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from google.protobuf.message import Message
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from services.kit.events.envelope import Envelope
from services.kit.events.tables import parked_event_row
from services.wallet.audit_cli import audit_database
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events
from tavla.wallet.v1 import wallet_pb2
from tests.support.identity import as_player
from tests.support.kafka import publish
from tests.support.wallet import (
    Side,
    Wallet,
    balance,
    fund,
    game_ended,
    held_for_game,
    new_id,
    wait_for_balance,
)

GAME_TOPIC = "tavla.game.v1"
ANTIABUSE_TOPIC = "tavla.antiabuse.v1"


def envelope(topic: str, key: str, message: Message, source: str) -> Envelope:
    return Envelope.wrap(topic=topic, key=key, message=message, source=source,
                         now=datetime.now(UTC))  # fmt: skip


async def parked_ids(wallet: Wallet, consumer: str) -> dict[str, tuple[str, str]]:
    engine = create_async_engine(wallet.url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(
                select(parked_event_row).where(parked_event_row.c.consumer == consumer)
            )
            return {row.event_id: (row.reason, row.error) for row in rows}
    finally:
        await engine.dispose()


async def seated_pair(
    wallet: Wallet, funds: int, hold: int, game_id: str
) -> tuple[Side, Side, str]:
    """Two funded players whose holds are claimed for ``game_id`` (real money settles only
    from those)."""
    table = new_id("t")
    players = [new_id(), new_id()]
    for player in players:
        await fund(wallet.stub, player, funds)
    winner, loser = await held_for_game(wallet.stub, players, hold, table, game_id)
    return winner, loser, table


async def test_a_forged_game_ended_is_parked_and_moves_no_money(
    wallet: Wallet, kafka_broker: Any
) -> None:
    game_id = new_id("g")
    winner, loser, table = await seated_pair(wallet, 2000, 1500, game_id)  # $5 x 1 x 3 each
    # The forger claims the game for the loser (a gammon, the most the holds allow).
    claim = game_ended(winner=loser, loser=winner, stake=500, result=2, table_id=table,
                       game_id=game_id)  # fmt: skip
    unsigned = envelope(GAME_TOPIC, game_id, claim, "game")
    impostor = envelope(GAME_TOPIC, game_id, claim, "game")
    real = envelope(GAME_TOPIC, game_id, game_ended(winner=winner, loser=loser, stake=500,
                                                    table_id=table, game_id=game_id), "game")
    await publish(kafka_broker.bootstrap, [unsigned], signed_as=None)
    await publish(kafka_broker.bootstrap, [impostor], signed_as="analysis")
    await publish(kafka_broker.bootstrap, [real])  # signed by the game, its owner

    # One partition per key, in order: once the real one is settled the forgeries were read.
    await wait_for_balance(wallet.stub, loser.player_id, 2000 - 500)  # the stake, once
    available, held = await balance(wallet.stub, winner.player_id)
    assert 2000 < available < 2500 and held == 0  # won the stake less the commission
    parked = await parked_ids(wallet, "wallet.settlement")
    assert parked[unsigned.event_id] == ("signature", "unsigned: no ce_signature header")
    assert parked[impostor.event_id][0] == "signature"
    assert "analysis does not own tavla.game.v1" in parked[impostor.event_id][1]
    assert await audit_database(wallet.url) == ()


async def frozen(wallet: Wallet, player: str) -> bool:
    balances = await wallet.stub.GetBalances(
        wallet_pb2.GetBalancesRequest(), metadata=as_player(player)
    )
    return bool(balances.frozen)


async def test_a_forged_sanction_freezes_nobody_and_a_real_one_after_it_does(
    wallet: Wallet, kafka_broker: Any
) -> None:
    victim, other = new_id(), new_id()
    await fund(wallet.stub, victim, 1000)
    await fund(wallet.stub, other, 1000)

    def sanction(account_id: str) -> Envelope:
        message = antiabuse_events.AccountSanctioned(
            sanction_id=new_id("s"),
            case_id=new_id("c"),
            kind=antiabuse_events.SANCTION_KIND_FREEZE_WALLET,
            account_id=account_id,
            reason="collusion",
        )
        return envelope(ANTIABUSE_TOPIC, account_id, message, "antiabuse")

    unsigned, impostor = sanction(victim), sanction(victim)
    await publish(kafka_broker.bootstrap, [unsigned], signed_as=None)
    await publish(kafka_broker.bootstrap, [impostor], signed_as="analysis")

    async def parked_both() -> bool:
        parked = await parked_ids(wallet, "wallet.sanctions")
        return {unsigned.event_id, impostor.event_id} <= set(parked)

    await _eventually(parked_both, "the forged sanctions were not parked")  # read, not applied
    parked = await parked_ids(wallet, "wallet.sanctions")
    assert parked[unsigned.event_id][0] == parked[impostor.event_id][0] == "signature"
    assert not await frozen(wallet, victim)

    real = sanction(victim)
    await publish(kafka_broker.bootstrap, [real])  # signed by anti-abuse, the topic's owner
    await _eventually(lambda: frozen(wallet, victim), "the genuine sanction was not applied")
    assert not await frozen(wallet, other)
    assert real.event_id not in await parked_ids(wallet, "wallet.sanctions")


async def _eventually(check: Any, what: str, timeout: float = 30.0) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await check():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(what) from None
