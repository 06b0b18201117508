"""How finished sessions reach anti-abuse, built with their publishers' protos: a money
game's end (any reason, with disconnection shares), its analysis, a rating change."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from services.kit.events.envelope import Envelope
from tavla.analysis.v1 import analysis_pb2
from tavla.analysis.v1 import events_pb2 as analysis
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2 as matchmaking
from tests.support.antiabuse import envelope

ANALYSIS_TOPIC = "tavla.analysis.v1"
PLAY_TOPICS = ("tavla.game.v1", "tavla.analysis.v1", "tavla.matchmaking.v1", "tavla.wallet.v1")


def new_id() -> str:
    return str(uuid.uuid4())


def money_game_ended(
    game_id: str,
    winner: str,
    loser: str,
    *,
    reason: int = game_pb2.END_REASON_BORNE_OFF,
    shares: Sequence[tuple[str, str]] = (),
    analysed: bool = True,
) -> Envelope:
    fact = game.GameEnded(
        game_id=game_id,
        table_id=new_id(),
        game_number=1,
        kind=game_pb2.PLAY_KIND_MONEY_GAME,
        winner_account_id=winner,
        loser_account_id=loser,
        cube_value=1,
        points=1,
        reason=reason,  # type: ignore[arg-type]
        stake=money_pb2.Money(minor_units=500, currency="USD"),
        players=[game_pb2.Player(account_id=winner), game_pb2.Player(account_id=loser)],
        shares=[game.SettlementShare(account_id=a, share=s) for a, s in shares],
        analysed=analysed and bool(shares),
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return envelope("tavla.game.v1", game_id, fact, "game")


def abandoned(game_id: str, leaver: str, other: str, leaver_share: str) -> list[Envelope]:
    """A money game ``leaver`` dropped out of and never came back to, settled by analysis
    at ``leaver_share`` of the stake for them (the game's events, in their order)."""
    drop = game.PlayerDisconnected(game_id=game_id, game_number=1, account_id=leaver)
    drop.occurred_at.FromDatetime(datetime.now(UTC))
    other_share = f"{1 - float(leaver_share):.4f}"
    winner, loser = (other, leaver) if float(leaver_share) < 0.5 else (leaver, other)
    end = money_game_ended(
        game_id,
        winner,
        loser,
        reason=game_pb2.END_REASON_DISCONNECTION,
        shares=[(leaver, leaver_share), (other, other_share)],
    )
    return [envelope("tavla.game.v1", game_id, drop, "game"), end]


def match_abandoned(game_id: str, leaver: str, other: str, leaver_mwc: str) -> list[Envelope]:
    """A 5-point match ``leaver`` dropped out of, settled at the match-winning chance
    ``leaver_mwc``: its last game's GameEnded (kind MATCH), then the MatchEnded."""
    drop = game.PlayerDisconnected(game_id=game_id, game_number=2, account_id=leaver)
    drop.occurred_at.FromDatetime(datetime.now(UTC))
    shares = [
        game.SettlementShare(account_id=leaver, share=leaver_mwc),
        game.SettlementShare(account_id=other, share=f"{1 - float(leaver_mwc):.4f}"),
    ]
    winner, loser = (other, leaver) if float(leaver_mwc) < 0.5 else (leaver, other)
    last_game = game.GameEnded(
        game_id=game_id,
        game_number=2,
        kind=game_pb2.PLAY_KIND_MATCH,
        winner_account_id=winner,
        loser_account_id=loser,
        reason=game_pb2.END_REASON_DISCONNECTION,
        shares=shares,
        analysed=True,
    )
    last_game.occurred_at.FromDatetime(datetime.now(UTC))
    match = game.MatchEnded(
        game_id=game_id,
        match_length=5,
        winner_account_id=winner,
        loser_account_id=loser,
        reason=game_pb2.END_REASON_DISCONNECTION,
        shares=shares,
        analysed=True,
        games_played=2,
    )
    match.occurred_at.FromDatetime(datetime.now(UTC))
    return [envelope("tavla.game.v1", game_id, fact, "game") for fact in (drop, last_game, match)]


def match_analysed(
    game_id: str, players: Sequence[tuple[str, float]], *, take: float = 0.0, taker: str = ""
) -> Envelope:
    """The analysis of a session: each (account, error per decision) over 30 decisions;
    ``taker`` took one double that cost ``take``."""
    fact = analysis.MatchAnalysed(game_id=game_id, analysis_id=new_id(), plies=0)
    for account, epd in players:
        player = fact.players.add(
            account_id=account,
            error_per_decision=epd,
            performance_rating=500 * epd,
            decisions=30,
            checker_decisions=28,
            cube_decisions=2,
        )
        if account == taker:
            player.decision_list.append(
                analysis_pb2.DecisionAnalysis(game_number=1, kind="take", counted=True, error=take)
            )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return envelope(ANALYSIS_TOPIC, game_id, fact, "analysis")


def rating_changed(
    game_id: str, account: str, opponent: str, previous: float, new: float
) -> Envelope:
    fact = matchmaking.RatingChanged(
        account_id=account,
        previous_rating=previous,
        new_rating=new,
        change=new - previous,
        game_id=game_id,
        opponent_account_id=opponent,
        match_length=1,
        experience=100,
    )
    fact.occurred_at.FromDatetime(datetime.now(UTC))
    return envelope("tavla.matchmaking.v1", account, fact, "matchmaking")


def under_new_ids(envelopes: Sequence[Envelope]) -> list[Envelope]:
    """The same facts again under new event ids (a publisher's retry after a lost ack)."""
    renamed = []
    for envelope_ in envelopes:
        event_id = new_id()
        headers = {**envelope_.headers, "ce_id": event_id}
        renamed.append(dataclasses.replace(envelope_, event_id=event_id, headers=headers))
    return renamed
