"""Sessions ended by a timeout or a resignation as the game service publishes them: the
``GameEnded`` that settled the money game by the rules, then the ``StopValued`` with
the stopper's share of the position where play stopped (built with the game's protos)."""

from __future__ import annotations

from datetime import UTC, datetime

from services.kit.events.envelope import Envelope
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tests.support.antiabuse import envelope
from tests.support.play_events import money_game_ended

TIMEOUT = game_pb2.END_REASON_TIMEOUT
RESIGNED = game_pb2.END_REASON_RESIGNED


def stop_valued(
    game_id: str, stopper: str, other: str, reason: int, share: str, *, analysed: bool = True
) -> Envelope:
    fact = game.StopValued(
        game_id=game_id,
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        reason=reason,  # type: ignore[arg-type]
        account_id=stopper,
        opponent_account_id=other,
        shares=[
            game.SettlementShare(account_id=stopper, share=share),
            game.SettlementShare(account_id=other, share=f"{1 - float(share):.4f}"),
        ],
        analysed=analysed,
        settlement=game.SettlementFigures(
            method="neural_net" if analysed else "not_analysed", on_roll_account_id=stopper
        ),
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return envelope("tavla.game.v1", game_id, fact, "game")


def stopped(
    game_id: str, stopper: str, other: str, reason: int, share: str, *, analysed: bool = True
) -> list[Envelope]:
    """A money game ``stopper`` lost on time or resigned (``reason``), their share of the
    position ``share``: its GameEnded (no shares: the rules settled it), then StopValued."""
    end = money_game_ended(game_id, other, stopper, reason=reason)
    return [end, stop_valued(game_id, stopper, other, reason, share, analysed=analysed)]
