"""``tavla tournament payouts``: what each place of a knockout wins, as JSON (and
``tavla tournament create``, the operators' CreateTournament: ``operator_cli.py``).

``tavla tournament payouts --pool MINOR --currency C --table NAME --places K
[--ticket-price MINOR]`` pays a prize pool of ``MINOR`` minor units of ``C`` to a
field of ``K`` entrants by the published table ``NAME`` (``standard``,
``winner-takes-all``; ``tickets`` for a satellite, with the target's buy-in plus fee
as ``--ticket-price``). It prints one JSON object: the inputs and ``payouts``, one
entry per place 1..K with the finish it is part of (``"3-4"`` for a shared one) and
its ``amount`` (0 when unpaid), or for a satellite whether it wins a ``ticket`` and its
cash ``amount`` (the satellite remainder rule: the pool not turned into tickets goes to
the next finish, the units that do not divide to place 1), with ``tickets`` and
``remainder``; two or more tickets are won before the final by the players left, so
their places share the finish ``"1-<tickets>"``. Tickets and cash sum to the pool.
A bad table, field, pool or currency is exit status 2 with one line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from services.kit.errors import InvalidArgument
from services.tournaments.domain.field import finishing_tiers, require_field
from services.tournaments.domain.prizes import (
    TICKETS,
    cash_payouts,
    prize_table,
    remainder_cash,
    require_amount,
    ticket_prizes,
)
from services.tournaments.domain.rules import require_currency
from services.tournaments.operator_cli import add_create

if TYPE_CHECKING:
    # Only subscriptable for the type checker on Python 3.11.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
USAGE_ERROR = 2


def register(subparsers: Subparsers) -> None:
    tournament = subparsers.add_parser(
        "tournament", help="tournament tools: prize payouts, creating a tournament"
    )
    commands = tournament.add_subparsers(
        dest="tournament_command", required=True, metavar="SUBCOMMAND"
    )
    payouts = commands.add_parser(
        "payouts",
        help="pay a prize pool by a prize table and print each place's prize as JSON",
        description="Print what each place of a field of K entrants wins from a pool.",
    )
    payouts.add_argument("--pool", required=True, type=int, metavar="MINOR",
                         help="the prize pool in minor units (cents)")
    payouts.add_argument("--currency", required=True, metavar="C", help="USD, EUR, ... or PLAY")
    payouts.add_argument("--table", required=True, metavar="NAME",
                         help="standard, winner-takes-all, or tickets (a satellite)")
    payouts.add_argument("--places", required=True, type=int, metavar="K",
                         help="the field: how many entrants finish in places 1..K")
    payouts.add_argument("--ticket-price", type=int, default=None, metavar="MINOR",
                         help="tickets only: the target tournament's buy-in plus fee")
    payouts.set_defaults(handler=run_payouts)
    add_create(commands)


def run_payouts(args: argparse.Namespace) -> int:
    try:
        output = payouts(args.pool, args.currency, args.table, args.places, args.ticket_price)
    except InvalidArgument as error:
        print(f"tavla tournament payouts: {error.message}", file=sys.stderr)
        return USAGE_ERROR
    print(json.dumps(output))
    return 0


def payouts(
    pool: int, currency: str, table: str, places: int, ticket_price: int | None
) -> dict[str, Any]:
    """The JSON object the command prints."""
    require_currency(currency)
    require_amount(pool, "the prize pool")
    require_field(places)
    head = {"pool": pool, "currency": currency, "table": table, "places": places}
    if table == TICKETS:
        if ticket_price is None:
            raise InvalidArgument("a satellite's payout needs --ticket-price (target buy-in + fee)")
        return {**head, **_tickets(pool, ticket_price, places)}
    if ticket_price is not None:
        raise InvalidArgument(f"--ticket-price is for the {TICKETS!r} table only")
    amounts = cash_payouts(pool, prize_table(table), places)
    return {**head, "payouts": [
        {"place": place, "finish": finish, "amount": _nth(amounts, place)}
        for place, finish in _places(places)
    ]}


def _tickets(pool: int, ticket_price: int, places: int) -> dict[str, Any]:
    prizes = ticket_prizes(pool, ticket_price, places)
    listed = _places(places)
    next_finish = [place for place, finish in listed
                   if finish.split("-")[0] == str(prizes.winners + 1)]  # fmt: skip
    each, left = remainder_cash(prizes.remainder, len(next_finish))

    def cash(place: int) -> int:
        return (each if place in next_finish else 0) + (left if place == 1 else 0)

    def shown(place: int, finish: str) -> str:
        # Two or more tickets are won before the final, equal: their winners share 1st.
        return f"1-{prizes.winners}" if prizes.winners > 1 and place <= prizes.winners else finish

    return {
        "ticket_price": ticket_price,
        "tickets": prizes.winners,
        "remainder": prizes.remainder,
        "payouts": [
            {"place": place, "finish": shown(place, finish), "ticket": place <= prizes.winners,
             "amount": cash(place)}
            for place, finish in listed
        ],
    }


def _places(field: int) -> list[tuple[int, str]]:
    """Every place 1..field with the label of the finish it belongs to ("3-4")."""
    listed: list[tuple[int, str]] = []
    for best, worst in finishing_tiers(field):
        label = str(best) if best == worst else f"{best}-{worst}"
        listed.extend((place, label) for place in range(best, worst + 1))
    return listed


def _nth(amounts: tuple[int, ...], place: int) -> int:
    return amounts[place - 1] if place <= len(amounts) else 0
