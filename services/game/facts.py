"""The ``tavla.game.v1`` events a session transition produces, built from domain values.

Every event carries the game id, the version after the fact and the time. The dice
server seed never appears here: only its commitment (the seed is revealed by
``GetMatchRecord`` once the game is over).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, TypeVar

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from services.game.rules import match_id_of
from services.game.rules import position_id_of as position_id
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2, game_pb2

if TYPE_CHECKING:
    from decimal import Decimal

    from services.game.domain import Figures, Outcome, Session, Stopped, TableRules


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp(moment: datetime) -> Timestamp:
    """Exact integer arithmetic (the protobuf helper is several times slower on the hot path)."""
    since = moment - _EPOCH
    return Timestamp(seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1000)


def duration(span: timedelta) -> Duration:
    seconds = span.days * 86_400 + span.seconds
    if seconds < 0 and span.microseconds:  # Duration keeps seconds and nanos of one sign
        return Duration(seconds=seconds + 1, nanos=(span.microseconds - 1_000_000) * 1000)
    return Duration(seconds=seconds, nanos=span.microseconds * 1000)


_KIND = {"money": game_pb2.PLAY_KIND_MONEY_GAME, "match": game_pb2.PLAY_KIND_MATCH}
_PENALTY = {
    "lose_game": game_pb2.TIMEOUT_PENALTY_LOSE_GAME,
    "lose_match": game_pb2.TIMEOUT_PENALTY_LOSE_MATCH,
}
END_REASON = {
    "borne_off": game_pb2.END_REASON_BORNE_OFF,
    "cube_dropped": game_pb2.END_REASON_CUBE_DROPPED,
    "resigned": game_pb2.END_REASON_RESIGNED,
    "timeout": game_pb2.END_REASON_TIMEOUT,
    "disconnection": game_pb2.END_REASON_DISCONNECTION,
    "left": game_pb2.END_REASON_LEFT,
}


def rules_message(rules: TableRules) -> game_pb2.TableRules:
    clock = rules.clock
    return game_pb2.TableRules(
        kind=_KIND[rules.kind.value],
        match_length=rules.match_length,
        stake=money_pb2.Money(minor_units=rules.stake_minor, currency=rules.currency),
        cube_cap=rules.cube_cap,
        beaver=rules.beaver,
        jacoby=rules.jacoby,
        crawford=rules.crawford,
        clock=game_pb2.ClockPreset(
            name=clock.name,
            move_delay=duration(clock.move_delay),
            reserve_per_point=duration(clock.reserve_per_point),
            reserve_per_game=duration(clock.reserve_per_game),
            timeout_penalty=_PENALTY[clock.penalty.value],
        ),
        table_stakes_minor_units=rules.table_stakes_minor,
        table_stakes_at_risk_minor_units=rules.at_risk_minor,
        rated=rules.rated,
    )


def players(session: Session) -> list[game_pb2.Player]:
    """The seats as matchmaking handed them over (the wallet settles holds by ``hold_id``)."""
    return [
        game_pb2.Player(
            account_id=seat.account_id,
            display_name=seat.display_name,
            rating=seat.rating,
            hold_id=seat.hold_id,
        )
        for seat in session.seats
    ]


def result_type(outcome: Outcome) -> int:
    """The result that scored: ``points == result x cube`` (a Jacoby gammon counts single).

    A forfeit of the rest of a match scores more than any result; it keeps its own.
    """
    if outcome.kind is None:
        return game_pb2.RESULT_TYPE_UNSPECIFIED
    cube = outcome.cube_value or 1
    scored, remainder = divmod(outcome.points, cube)
    if remainder == 0 and 1 <= scored <= 3:
        return scored
    return int(outcome.kind)


def _account(session: Session, player: int) -> str:
    return session.seats[player].account_id


def game_started(session: Session, now: datetime) -> events_pb2.GameStarted:
    return events_pb2.GameStarted(
        game_id=session.game_id,
        version=session.version,
        table_id=session.table_id,
        game_number=session.game_number,
        rules=rules_message(session.rules),
        players=players(session),
        dice_seed_commitment=session.commitment,
        occurred_at=timestamp(now),
    )


def dice_rolled(
    session: Session, player: int, roll_number: int, opening: bool, now: datetime
) -> events_pb2.DiceRolled:
    return events_pb2.DiceRolled(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        dice=list(session.game.dice or ()),
        roll_number=roll_number,
        opening_roll=opening,
        occurred_at=timestamp(now),
    )


def move_played(
    before: Session, after: Session, taken: timedelta, now: datetime
) -> events_pb2.MovePlayed:
    last = after.game.history[-1] if after.game.history else None
    return events_pb2.MovePlayed(
        game_id=after.game_id,
        version=after.version,
        game_number=after.game_number,
        account_id=_account(before, before.game.turn),
        dice=list(before.game.dice or ()),
        notation=last.notation if last is not None else "",
        position_id_before=position_id(before.game.board),
        # The mover's view after the play: the library hands the board to the opponent.
        position_id_after=position_id(
            after.game.board if after.game.result is not None else after.game.board.swapped()
        ),
        gnubg_match_id_before=match_id_of(before.game, before.score),
        time_taken=duration(taken),
        occurred_at=timestamp(now),
    )


def cube_offered(before: Session, after: Session, now: datetime) -> events_pb2.CubeOffered:
    return events_pb2.CubeOffered(
        game_id=after.game_id,
        version=after.version,
        game_number=after.game_number,
        account_id=_account(after, after.game.turn),
        cube_value=after.game.cube.offered_value,
        position_id=position_id(after.game.board),
        gnubg_match_id=match_id_of(after.game, after.score),
        time_taken=duration(now - before.decision_started_at),
        occurred_at=timestamp(now),
    )


def _answerer(before: Session) -> int:
    offered_by = before.game.cube.offered_by
    assert offered_by is not None
    return 1 - offered_by


CubeAnswer = TypeVar(
    "CubeAnswer", events_pb2.CubeTaken, events_pb2.CubeDropped, events_pb2.CubeBeavered
)


def _cube_answer(
    fact: type[CubeAnswer], before: Session, after: Session, cube_value: int, now: datetime
) -> CubeAnswer:
    return fact(
        game_id=after.game_id,
        version=after.version,
        game_number=after.game_number,
        account_id=_account(after, _answerer(before)),
        cube_value=cube_value,
        time_taken=duration(now - before.decision_started_at),
        occurred_at=timestamp(now),
    )


def cube_taken(before: Session, after: Session, now: datetime) -> events_pb2.CubeTaken:
    return _cube_answer(events_pb2.CubeTaken, before, after, after.game.cube.value, now)


def cube_dropped(before: Session, after: Session, now: datetime) -> events_pb2.CubeDropped:
    """The cube value the game was lost at: the one before the refused double."""
    return _cube_answer(events_pb2.CubeDropped, before, after, before.game.cube.value, now)


def cube_beavered(before: Session, after: Session, now: datetime) -> events_pb2.CubeBeavered:
    return _cube_answer(events_pb2.CubeBeavered, before, after, after.game.cube.value, now)


ResignFact = TypeVar(
    "ResignFact", events_pb2.ResignOffered, events_pb2.ResignAccepted, events_pb2.ResignRejected
)


def _resignation(
    fact: type[ResignFact], session: Session, player: int, level: int, now: datetime
) -> ResignFact:
    return fact(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        level=level,  # type: ignore[arg-type]
        occurred_at=timestamp(now),
    )


def resign_offered(
    session: Session, player: int, level: int, now: datetime
) -> events_pb2.ResignOffered:
    return _resignation(events_pb2.ResignOffered, session, player, level, now)


def resign_accepted(
    session: Session, player: int, level: int, now: datetime
) -> events_pb2.ResignAccepted:
    return _resignation(events_pb2.ResignAccepted, session, player, level, now)


def resign_rejected(
    session: Session, player: int, level: int, now: datetime
) -> events_pb2.ResignRejected:
    return _resignation(events_pb2.ResignRejected, session, player, level, now)


def player_disconnected(
    session: Session, player: int, now: datetime
) -> events_pb2.PlayerDisconnected:
    awaiting = session.awaiting
    deadline = session.presence[player].deadline
    assert deadline is not None
    return events_pb2.PlayerDisconnected(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        awaiting_account_id="" if awaiting is None else _account(session, awaiting),
        position_id=position_id(session.game.board),
        gnubg_match_id=match_id_of(session.game, session.score),
        reconnect_deadline=timestamp(deadline),
        occurred_at=timestamp(now),
    )


def player_location_blocked(
    session: Session, player: int, now: datetime
) -> events_pb2.PlayerLocationBlocked:
    presence = session.presence[player]
    located = session.located[player]
    event = events_pb2.PlayerLocationBlocked(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        reason=presence.blocked,
        ip_address="" if located is None else located.address,
        occurred_at=timestamp(now),
    )
    if presence.deadline is not None:
        event.reconnect_deadline.CopyFrom(timestamp(presence.deadline))
    return event


def player_reconnected(
    session: Session, player: int, away: timedelta, now: datetime
) -> events_pb2.PlayerReconnected:
    return events_pb2.PlayerReconnected(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        disconnected_for=duration(away),
        occurred_at=timestamp(now),
    )


def clock_expired(session: Session, player: int, now: datetime) -> events_pb2.ClockExpired:
    return events_pb2.ClockExpired(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        account_id=_account(session, player),
        penalty=_PENALTY[session.rules.clock.penalty.value],
        occurred_at=timestamp(now),
    )


def _shares(session: Session, outcome: Outcome) -> list[events_pb2.SettlementShare]:
    return _share_messages(session, outcome.shares)


def _share_messages(
    session: Session, shares: tuple[Decimal, Decimal] | None
) -> list[events_pb2.SettlementShare]:
    if shares is None:
        return []
    return [
        events_pb2.SettlementShare(account_id=seat.account_id, share=str(share))
        for seat, share in zip(session.seats, shares, strict=True)
    ]


def _figures(session: Session, outcome: Outcome) -> events_pb2.SettlementFigures | None:
    return _figures_message(session, outcome.figures)


def _figures_message(
    session: Session, figures: Figures | None
) -> events_pb2.SettlementFigures | None:
    if figures is None:
        return None
    return events_pb2.SettlementFigures(
        method=figures.method,
        basis=figures.basis,
        plies=figures.plies,
        cubeful_equity=figures.cubeful_equity,
        match_winning_chance=figures.match_winning_chance,
        on_roll_account_id=_account(session, figures.on_roll),
    )


def game_ended(session: Session, outcome: Outcome, now: datetime) -> events_pb2.GameEnded:
    winner = outcome.winner
    return events_pb2.GameEnded(
        game_id=session.game_id,
        version=session.version,
        table_id=session.table_id,
        game_number=session.game_number,
        kind=_KIND[session.rules.kind.value],
        winner_account_id=_account(session, winner),
        loser_account_id=_account(session, 1 - winner),
        result=result_type(outcome),  # type: ignore[arg-type]
        cube_value=outcome.cube_value,
        points=outcome.points,
        reason=END_REASON[outcome.cause.value],
        stake=money_pb2.Money(
            minor_units=session.rules.stake_minor, currency=session.rules.currency
        ),
        players=players(session),
        score=list(session.score.score),
        position_id=position_id(session.game.board),
        gnubg_match_id=match_id_of(session.game, session.score),
        shares=_shares(session, outcome),
        analysed=outcome.analysed,
        settlement=_figures(session, outcome),
        occurred_at=timestamp(now),
        table_stakes_at_risk_minor_units=session.rules.at_risk_minor,
    )


def match_ended(session: Session, outcome: Outcome, now: datetime) -> events_pb2.MatchEnded:
    winner = outcome.winner
    return events_pb2.MatchEnded(
        game_id=session.game_id,
        version=session.version,
        table_id=session.table_id,
        match_length=session.rules.match_length,
        winner_account_id=_account(session, winner),
        loser_account_id=_account(session, 1 - winner),
        final_score=list(session.score.score),
        reason=END_REASON[outcome.cause.value],
        stake=money_pb2.Money(
            minor_units=session.rules.stake_minor, currency=session.rules.currency
        ),
        players=players(session),
        record_id=session.game_id,
        games_played=session.score.games_played,
        shares=_shares(session, outcome),
        analysed=outcome.analysed,
        settlement=_figures(session, outcome),
        occurred_at=timestamp(now),
        rated=session.rules.rated,
    )


def game_cancelled(
    session: Session, reason: str, now: datetime, absent: str = ""
) -> events_pb2.GameCancelled:
    return events_pb2.GameCancelled(
        game_id=session.game_id,
        version=session.version,
        table_id=session.table_id,
        players=players(session),
        reason=reason,
        occurred_at=timestamp(now),
        absent_account_id=absent,
    )


def stop_valued(
    session: Session,
    outcome: Outcome,
    stopped: Stopped,
    shares: tuple[Decimal, Decimal],
    analysed: bool,
    figures: Figures,
    now: datetime,
) -> events_pb2.StopValued:
    """The valuation of where a session stopped by a timeout or a resignation."""
    return events_pb2.StopValued(
        game_id=session.game_id,
        version=session.version,
        game_number=session.game_number,
        kind=_KIND[session.rules.kind.value],
        reason=END_REASON[outcome.cause.value],
        account_id=_account(session, stopped.player),
        opponent_account_id=_account(session, 1 - stopped.player),
        position_id=stopped.position_id,
        gnubg_match_id=stopped.gnubg_match_id,
        shares=_share_messages(session, shares),
        analysed=analysed,
        settlement=_figures_message(session, figures),
        occurred_at=timestamp(now),
    )
