"""Protobuf and stored forms of the tournaments' domain values, and the topic.

Rules travel as ``tavla.tournaments.v1.Rules`` (API, events) and are stored as that
message's JSON (a bracket is stored as a row per match: ``store.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.timestamp_pb2 import Timestamp

from services.kit.errors import InvalidArgument
from services.tournaments.domain import bracket as brackets
from services.tournaments.domain.lobby import Status, Ticket, Tournament
from services.tournaments.domain.prize_places import prize_field, prize_places, satellite_places
from services.tournaments.domain.prizes import SatellitePlan
from services.tournaments.domain.rules import Kind, Rules, Scheduled, SitAndGo
from tavla.common.v1 import money_pb2
from tavla.tournaments.v1 import tournaments_pb2

TOPIC: Final = "tavla.tournaments.v1"

KINDS: Final = {
    Kind.SIT_AND_GO: tournaments_pb2.KIND_SIT_AND_GO,
    Kind.SCHEDULED: tournaments_pb2.KIND_SCHEDULED,
    Kind.SATELLITE: tournaments_pb2.KIND_SATELLITE,
    Kind.FREEROLL: tournaments_pb2.KIND_FREEROLL,
}
STATUSES: Final = {
    Status.REGISTERING: tournaments_pb2.STATUS_REGISTERING,
    Status.SEATED: tournaments_pb2.STATUS_RUNNING,  # drawn, starting: players see it running
    Status.RUNNING: tournaments_pb2.STATUS_RUNNING,
    Status.FINISHED: tournaments_pb2.STATUS_FINISHED,
    Status.CANCELLING: tournaments_pb2.STATUS_CANCELLED,
    Status.CANCELLED: tournaments_pb2.STATUS_CANCELLED,
}
MATCH_STATES: Final = {
    brackets.MatchState.WAITING: tournaments_pb2.MATCH_STATE_WAITING,
    brackets.MatchState.READY: tournaments_pb2.MATCH_STATE_READY,
    brackets.MatchState.PLAYING: tournaments_pb2.MATCH_STATE_PLAYING,
    brackets.MatchState.FINISHED: tournaments_pb2.MATCH_STATE_FINISHED,
}


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def _moment(stamp: Timestamp, what: str) -> datetime:
    if not stamp.seconds and not stamp.nanos:
        raise InvalidArgument(f"{what} is required (an RFC 3339 time)")
    return stamp.ToDatetime(tzinfo=UTC)


def money(minor_units: int, currency: str) -> money_pb2.Money:
    return money_pb2.Money(minor_units=minor_units, currency=currency)


def rules_from(message: tournaments_pb2.Rules) -> Rules:
    """The domain's rules (checked as a whole on construction) from the request's."""
    start: SitAndGo | Scheduled
    which = message.WhichOneof("start")
    if which == "sit_and_go":
        start = SitAndGo(message.sit_and_go.seats)
    elif which == "scheduled":
        scheduled = message.scheduled
        start = Scheduled(
            starts_at=_moment(scheduled.starts_at, "scheduled.starts_at"),
            registration_opens_at=_moment(
                scheduled.registration_opens_at, "scheduled.registration_opens_at"
            ),
            registration_closes_at=_moment(
                scheduled.registration_closes_at, "scheduled.registration_closes_at"
            ),
            min_entrants=scheduled.min_entrants,
            max_entrants=scheduled.max_entrants,
        )
    else:
        raise InvalidArgument("rules need a start: sit_and_go (seats) or scheduled (times)")
    return Rules(
        start=start,
        match_lengths=tuple(message.match_lengths),
        clock=message.clock,
        currency=message.currency,
        buy_in=message.buy_in,
        entry_fee=message.entry_fee,
        prize_table=message.prize_table,
        added_prize=message.added_prize,
        target_tournament_id=message.target_tournament_id,
        ticket_value=message.ticket_value,
    )


def rules_message(rules: Rules) -> tournaments_pb2.Rules:
    message = tournaments_pb2.Rules(
        match_lengths=list(rules.match_lengths),
        clock=rules.clock,
        currency=rules.currency,
        buy_in=rules.buy_in,
        entry_fee=rules.entry_fee,
        prize_table=rules.prize_table,
        added_prize=rules.added_prize,
        target_tournament_id=rules.target_tournament_id,
        ticket_value=rules.ticket_value,
        crawford=rules.crawford,
        jacoby=rules.jacoby,
        beaver=rules.beaver,
        kind=KINDS[rules.kind],
    )
    start = rules.start
    if isinstance(start, SitAndGo):
        message.sit_and_go.seats = start.seats
    else:
        message.scheduled.CopyFrom(
            tournaments_pb2.Scheduled(
                starts_at=timestamp(start.starts_at),
                registration_opens_at=timestamp(start.registration_opens_at),
                registration_closes_at=timestamp(start.registration_closes_at),
                min_entrants=start.min_entrants,
                max_entrants=start.max_entrants,
            )
        )
    return message


def rules_json(rules: Rules) -> dict[str, Any]:
    return json_format.MessageToDict(rules_message(rules))


def rules_from_json(data: dict[str, Any]) -> Rules:
    return rules_from(json_format.ParseDict(data, tournaments_pb2.Rules()))


Parts = tuple[list[tournaments_pb2.Match], list[tournaments_pb2.Standing]]


def tournament_message(
    tournament: Tournament,
    paid: dict[str, int] | None = None,
    parts: Parts | None = None,
) -> tournaments_pb2.Tournament:
    """``parts``: the bracket's match and standing messages, when the caller has them
    (the lobby's, :mod:`services.tournaments.shown`); else built here."""
    rules = tournament.rules
    message = tournaments_pb2.Tournament(
        tournament_id=tournament.id,
        name=tournament.name,
        rules=rules_message(rules),
        status=STATUSES[tournament.status],
        entrants=[e.account_id for e in tournament.entrants],
        seed_commitment=tournament.commitment,
        created_at=timestamp(tournament.created_at),
        cancel_reason=tournament.cancel_reason,
        prize_field=prize_field(tournament),
    )
    message.prize_places.extend(
        tournaments_pb2.PrizePlace(
            best_place=place.best,
            worst_place=place.worst,
            share_basis_points=place.share,
            amount=money(place.amount, rules.currency),
        )
        for place in prize_places(tournament)
    )
    plan = satellite_places(tournament)
    if plan is not None:
        message.satellite_prizes.CopyFrom(satellite_message(plan, rules.currency))
    seed = tournament.revealed_seed
    if seed is not None:
        message.seed = seed.hex()
    if tournament.started_at is not None:
        message.started_at.CopyFrom(timestamp(tournament.started_at))
        message.prize_pool.CopyFrom(money(tournament.prize_pool, rules.currency))
    if tournament.finished_at is not None:
        message.finished_at.CopyFrom(timestamp(tournament.finished_at))
    bracket = tournament.bracket
    if bracket is not None:
        message.seating.extend(bracket.order)
        over = tournament.status is Status.FINISHED
        matches, standings = parts or bracket_parts(rules, bracket, over, paid or {})
        message.bracket.extend(matches)
        message.standings.extend(standings)
    message.tickets.extend(ticket_message(ticket, rules.currency) for ticket in tournament.tickets)
    return message


def bracket_parts(
    rules: Rules, bracket: brackets.Bracket, over: bool, paid: dict[str, int]
) -> Parts:
    """A bracket's match and standing messages, built from scratch (``over``: the
    tournament is finished; ``paid``: the prizes paid, by player)."""
    matches = [match_message(rules, match, over) for match in bracket.matches()]
    standings = [
        standing_message(standing, rules.currency, paid.get(standing.player))
        for standing in brackets.standings(bracket)
    ]
    return matches, standings


def ticket_message(ticket: Ticket, currency: str) -> tournaments_pb2.Ticket:
    return tournaments_pb2.Ticket(
        account_id=ticket.account_id,
        target_tournament_id=ticket.target_id,
        value=money(ticket.value, currency),
        used=ticket.used,
    )


def satellite_message(plan: SatellitePlan, currency: str) -> tournaments_pb2.SatellitePrizes:
    return tournaments_pb2.SatellitePrizes(
        tickets=plan.tickets.winners,
        ticket_value=money(plan.tickets.ticket_price, currency),
        rounds_played=plan.rounds_played,
        remainder=money(plan.tickets.remainder, currency),
        remainder_best_place=plan.next_best,
        remainder_worst_place=plan.next_worst,
        remainder_each=money(plan.each, currency),
        remainder_to_first=money(plan.to_first, currency),
    )


def match_message(
    rules: Rules, match: brackets.Match, over: bool = False, length: int = 0
) -> tournaments_pb2.Match:
    """A match as shown; one left unfinished when the tournament is over (a satellite's,
    after its tickets were won) was never played. ``length``: its round's, when the
    caller has it at hand (else from ``rules``)."""
    state = MATCH_STATES[match.state]
    if over and match.state is not brackets.MatchState.FINISHED:
        state = tournaments_pb2.MATCH_STATE_NOT_PLAYED
    return tournaments_pb2.Match(
        match_id=match.id,
        round=match.round,
        players=[player or "" for player in match.players],
        state=state,
        game_id=match.game_id,
        winner_account_id=match.winner or "",
        decision=match.decision.value if match.decision else "",
        match_length=length or rules.match_length(match.round),
    )


def standing_message(
    standing: brackets.Standing, currency: str, prize: int | None
) -> tournaments_pb2.Standing:
    message = tournaments_pb2.Standing(
        account_id=standing.player,
        best_place=standing.best,
        worst_place=standing.worst,
        alive=standing.alive,
        wins=standing.wins,
    )
    if prize is not None:
        message.prize.CopyFrom(money(prize, currency))
    return message
