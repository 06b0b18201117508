"""Protobuf <-> lobby domain: table rules, tables, and the events matchmaking publishes."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from google.protobuf.timestamp_pb2 import Timestamp

from services.kit.errors import InvalidArgument
from services.matchmaking.domain.tables import Kind, RatingRange, Rules, Status, Table, parse_rules
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.matchmaking.v1 import events_pb2, matchmaking_pb2

TOPIC = "tavla.matchmaking.v1"

_KINDS = {game_pb2.PLAY_KIND_MONEY_GAME: Kind.MONEY_GAME, game_pb2.PLAY_KIND_MATCH: Kind.MATCH}
_KIND_MESSAGES = {kind: number for number, kind in _KINDS.items()}
_STATUS = {
    Status.OPEN: matchmaking_pb2.TABLE_STATUS_OPEN,
    Status.SEATING: matchmaking_pb2.TABLE_STATUS_SEATING,
    Status.PLAYING: matchmaking_pb2.TABLE_STATUS_PLAYING,
    Status.CLOSED: matchmaking_pb2.TABLE_STATUS_CLOSED,
}


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def kind_from(number: int) -> Kind | None:
    return _KINDS.get(number)  # type: ignore[call-overload, no-any-return]


def rules_from(message: game_pb2.TableRules) -> Rules:
    clock = message.clock
    if clock.move_delay.ByteSize() or clock.reserve_per_point.ByteSize() or (
        clock.reserve_per_game.ByteSize() or clock.timeout_penalty
    ):
        raise InvalidArgument("a lobby table takes a clock preset by name only (standard, blitz)")
    return parse_rules(
        kind=kind_from(message.kind),
        match_length=message.match_length,
        stake_minor=message.stake.minor_units,
        currency=message.stake.currency,
        cube_cap=message.cube_cap,
        beaver=message.beaver,
        jacoby=message.jacoby,
        crawford=message.crawford if message.HasField("crawford") else None,
        clock=clock.name,
        table_stakes_minor=message.table_stakes_minor_units,
    )


def rules_message(rules: Rules, at_risk: int = 0) -> game_pb2.TableRules:
    """The rules as the game (and a table's view) takes them; ``at_risk`` is what a
    table-stakes game may put at risk (the smaller stake left; the bring-in by default)."""
    message = game_pb2.TableRules(
        kind=_KIND_MESSAGES[rules.kind],
        match_length=rules.match_length,
        stake=money_pb2.Money(minor_units=rules.stake_minor, currency=rules.currency),
        cube_cap=rules.cube_cap,
        beaver=rules.beaver,
        jacoby=rules.jacoby,
        clock=game_pb2.ClockPreset(name=rules.clock),
    )
    if rules.kind is Kind.MATCH:
        message.crawford = rules.crawford
    if rules.table_stakes:
        message.table_stakes_minor_units = rules.table_stakes_minor
        message.table_stakes_at_risk_minor_units = at_risk or rules.table_stakes_minor
    return message


def _at_risk(table: Table) -> int:
    """A playing table-stakes table's current game's amount at risk (0: the bring-in)."""
    if not table.rules.table_stakes or len(table.seats) < 2:
        return 0
    return table.at_risk()


def rating_range_from(message: matchmaking_pb2.RatingRange) -> RatingRange:
    return RatingRange.parse(message.min_rating, message.max_rating)


def table_message(table: Table, viewer: str) -> matchmaking_pb2.Table:
    """The table as ``viewer`` (the calling player) sees it: every seat's hold id is the
    wallet's and its holder's only, so another player's is left out."""
    message = matchmaking_pb2.Table(
        table_id=table.table_id,
        rules=rules_message(table.rules, _at_risk(table)),
        status=_STATUS[table.status],
        players=[
            matchmaking_pb2.SeatedPlayer(
                account_id=seat.account_id,
                rating=seat.rating or 0.0,
                hold_id=seat.hold_id if seat.account_id == viewer else "",
                table_stake_left_minor_units=seat.stake_left,
            )
            for seat in table.seats
        ],
        game_id=table.game_id,
        created_by_account_id=table.owner_id,
        created_at=timestamp(table.created_at),
        invited_account_id=table.invited_account_id,
        close_reason=table.close_reason,
        games_played=table.games_played,
        leaving_account_id=table.leaving_id,
    )
    span = table.rating_range
    if span.low is not None or span.high is not None:
        message.rating_range.CopyFrom(
            matchmaking_pb2.RatingRange(min_rating=span.low or 0, max_rating=span.high or 0)
        )
    return message


def table_opened(table: Table) -> events_pb2.TableOpened:
    return events_pb2.TableOpened(
        table_id=table.table_id,
        rules=rules_message(table.rules),
        created_by_account_id=table.owner_id,
        occurred_at=timestamp(table.created_at),
    )


def player_seated(table: Table, seat_number: int, now: datetime) -> events_pb2.PlayerSeated:
    seat = table.seats[seat_number]
    return events_pb2.PlayerSeated(
        table_id=table.table_id,
        account_id=seat.account_id,
        rating=seat.rating or 0.0,
        hold_id=seat.hold_id,
        occurred_at=timestamp(now),
    )


def match_made(
    table: Table, now: datetime, ticket_ids: Sequence[str] = ()
) -> events_pb2.MatchMade:
    """The game started; ``ticket_ids``: the queue tickets paired there (none in the lobby)."""
    return events_pb2.MatchMade(
        table_id=table.table_id,
        game_id=table.game_id,
        account_ids=[seat.account_id for seat in table.seats],
        ratings=[seat.rating or 0.0 for seat in table.seats],
        rules=rules_message(table.rules),
        ticket_ids=list(ticket_ids),
        occurred_at=timestamp(now),
    )


def player_left(table: Table, account_id: str, now: datetime) -> events_pb2.PlayerLeftTable:
    return events_pb2.PlayerLeftTable(
        table_id=table.table_id, account_id=account_id, occurred_at=timestamp(now)
    )


def table_closed(table: Table, now: datetime) -> events_pb2.TableClosed:
    return events_pb2.TableClosed(
        table_id=table.table_id, reason=table.close_reason, occurred_at=timestamp(now)
    )
