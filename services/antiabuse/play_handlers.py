"""The facts consumer's handlers for how sessions were played (the play detectors' facts).

``GameEnded`` of a money game and ``MatchEnded`` (``tavla.game.v1``): the session's
result, and for one abandoned until its reconnect window closed, who left (the
account whose ``PlayerDisconnected`` of that session came last; the session's events
share its Kafka key, so they are stored before its end) and the leaver's share from
the analysis it was settled with. ``MatchAnalysed`` (``tavla.analysis.v1``): each
player's error per decision and worst cube answers. ``RatingChanged``
(``tavla.matchmaking.v1``): the rating before and after.

Each fact is kept once (:mod:`services.antiabuse.results_store`); only a new fact runs
the detectors it can change: deliberate disconnects (the leaver; and each player
whose 5th session in the window this is, the first the rate routes judge), win trading (the
pair), and once a session is both ended and analysed, win trading again (its loss now
judged), thrown losses (both players) and chip dumping (the pair again: its analysis
half may now be complete).
``StopValued`` (``tavla.game.v1``, after a session ended by a timeout or a resignation):
where the stopper stopped, valued (:mod:`services.antiabuse.stops_store`); a timeout
runs the stopper's deliberate-disconnect test, a resignation the pair's chip dumping.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from services.antiabuse.alerting import Work
from services.antiabuse.detectors.chip_dumping import ChipDumping
from services.antiabuse.detectors.deliberate_disconnect import DeliberateDisconnect
from services.antiabuse.detectors.rating_manipulation import RatingManipulation
from services.antiabuse.results_store import ResultFacts, SessionAnalysis, SessionResult
from services.antiabuse.stops_store import StopFacts, StoppedSession
from tavla.analysis.v1 import analysis_pb2
from tavla.analysis.v1 import events_pb2 as analysis
from tavla.game.v1 import events_pb2 as game
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2 as matchmaking

Ended = game.GameEnded | game.MatchEnded


def _share(fact: Ended | game.StopValued, account_id: str) -> float | None:
    if not fact.analysed:
        return None  # the even split: the position was not valued
    for share in fact.shares:
        if share.account_id == account_id:
            try:
                return float(Decimal(share.share))
            except InvalidOperation:
                return None
    return None


def _worst(player: analysis_pb2.PlayerAnalysis, kind: str) -> float:
    return max((d.error for d in player.decision_list if d.kind == kind), default=0.0)


class PlayHandlers:
    def __init__(self, chip_dumping: ChipDumping) -> None:
        self._chip_dumping = chip_dumping
        self.disconnects = DeliberateDisconnect()
        self.rating = RatingManipulation()

    async def ended(self, work: Work, fact: Ended, at: datetime) -> None:
        """A finished session: a money game's ``GameEnded`` or a ``MatchEnded``."""
        if isinstance(fact, game.GameEnded) and fact.kind != game_pb2.PLAY_KIND_MONEY_GAME:
            return  # a game inside a match: the MatchEnded is the session's result
        winner, loser = fact.winner_account_id, fact.loser_account_id
        if not fact.game_id or not winner or not loser or winner == loser:
            return
        facts = ResultFacts(work.session)
        leaver, share = None, None
        if fact.reason == game_pb2.END_REASON_DISCONNECTION:
            left = await facts.leavers(fact.game_id)
            leaver = left[-1] if left else None
            share = _share(fact, leaver) if leaver else None
        result = SessionResult(fact.game_id, winner, loser, fact.reason, leaver, share, at)
        if not await facts.ended(result):
            return
        if leaver is not None and share is not None:
            await self.disconnects.examine(work, leaver)
        for player in (winner, loser):
            if player != leaver:  # the leaver was judged at its stop just now
                await self.disconnects.examine_at_session_end(work, player)
        if await facts.analysis_of(fact.game_id):
            await self._played(work, winner, loser)
        else:
            await self.rating.win_trading(work, winner, loser)

    async def stop_valued(self, work: Work, fact: game.StopValued, at: datetime) -> None:
        """Where a session ended by a timeout or a resignation stopped, valued."""
        stopper, opponent = fact.account_id, fact.opponent_account_id
        timeout = fact.reason == game_pb2.END_REASON_TIMEOUT
        if not timeout and fact.reason != game_pb2.END_REASON_RESIGNED:
            return
        if not fact.game_id or not stopper or not opponent or stopper == opponent:
            return
        share = _share(fact, stopper)
        stopped = StoppedSession(fact.game_id, stopper, opponent, fact.reason, share, at)
        if not await StopFacts(work.session).valued(stopped) or share is None:
            return
        if timeout:
            await self.disconnects.examine(work, stopper)
        else:
            await self._chip_dumping.examine(work, stopper, opponent)

    async def analysed(self, work: Work, fact: analysis.MatchAnalysed, at: datetime) -> None:
        rows = [
            SessionAnalysis(
                game_id=fact.game_id,
                account_id=p.account_id,
                error_per_decision=p.error_per_decision,
                decisions=p.decisions,
                worst_take_error=_worst(p, "take"),
                worst_pass_error=_worst(p, "pass"),
                at=at,
            )
            for p in fact.players
            if p.account_id
        ]
        facts = ResultFacts(work.session)
        if not fact.game_id or not await facts.analysed(rows):
            return
        result = await facts.result(fact.game_id)
        if result is not None:
            await self._played(work, result.winner, result.loser)

    async def _played(self, work: Work, winner: str, loser: str) -> None:
        """A session now both ended and analysed: what its analysis can change."""
        await self.rating.win_trading(work, winner, loser)  # the loss judged: played or not
        await self.rating.thrown(work, loser)
        await self.rating.thrown(work, winner)  # a win moves the winner's baseline
        # The flow itself is examined on each settlement; here its analysis half.
        await self._chip_dumping.examine(work, loser, winner)

    async def rating_changed(
        self, work: Work, fact: matchmaking.RatingChanged, at: datetime
    ) -> None:
        if not fact.account_id or not fact.game_id:
            return
        if await ResultFacts(work.session).rated(
            fact.game_id,
            fact.account_id,
            fact.opponent_account_id,
            fact.previous_rating,
            fact.new_rating,
            at,
        ):
            await self.rating.thrown(work, fact.account_id)
            if fact.opponent_account_id:
                # The opponent's own change of this session may have come first (the
                # topic is keyed by account): this one gives it its opponent's rating.
                await self.rating.thrown(work, fact.opponent_account_id)
