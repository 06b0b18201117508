"""``tavla wallet``: operator tools for the wallet.

``tavla wallet quote`` prices a settlement under the commission schedule, so an
operator or support agent can explain a charge without touching the ledger.
Each sub-command is one ``_register_*`` function listed in ``SUBCOMMANDS``; the
service layer adds ``wallet audit`` and ``wallet reconcile`` the same way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from services.wallet.domain.commission import CommissionQuote, quote_match, quote_single_game
from services.wallet.domain.errors import WalletError
from services.wallet.domain.money import Money
from services.wallet.domain.schedule import (
    CommissionSchedule,
    schedule_by_version,
    schedule_in_force,
)
from services.wallet.domain.terms import Match, MoneyGame, WinType

if TYPE_CHECKING:
    # Only subscriptable for the type checker on Python 3.11.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
USAGE_ERROR = 2


class QuoteInputError(WalletError):
    """Options that do not describe one game or match."""

    reason = "INVALID_QUOTE_INPUT"


def register(subparsers: Subparsers) -> None:
    wallet = subparsers.add_parser(
        "wallet", help="wallet tools: commission quotes, ledger audit, payment reconciliation"
    )
    commands = wallet.add_subparsers(dest="wallet_command", required=True, metavar="SUBCOMMAND")
    for register_subcommand in SUBCOMMANDS:
        register_subcommand(commands)


def _register_quote(commands: Subparsers) -> None:
    quote = commands.add_parser(
        "quote",
        help="price a single game or a match under the commission schedule",
        description=(
            "Print the commission on one settlement as JSON, amounts as decimal strings. "
            "A single game needs --cube and --result (default 1, single); a series --length."
        ),
    )
    quote.add_argument("--kind", choices=("single", "series"), required=True)
    quote.add_argument("--stake", required=True, metavar="DOLLARS", help="e.g. 5 or 10.50")
    quote.add_argument("--cube", type=int, default=None, metavar="C")
    quote.add_argument("--result", choices=[kind.name.lower() for kind in WinType], default=None)
    quote.add_argument("--length", type=int, default=None, metavar="N", help="match points")
    quote.add_argument("--ratings", nargs=2, required=True, metavar=("R1", "R2"))
    quote.add_argument("--currency", default="USD", help="USD (default), another held one, PLAY")
    quote.add_argument(
        "--schedule", default=None, metavar="VERSION", help="default: the one in force now"
    )
    quote.set_defaults(handler=run_quote)


def _register_audit(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "audit",
        help="check the ledger's invariants on TAVLA_DATABASE_URL; non-zero exit on a breach",
        description=(
            "Checks that every currency's balances sum to zero, each balance equals the sum "
            "of its entries, no player balance is negative, every transfer is balanced, and "
            "every open hold belongs to a live table and is covered by the held-stakes account. "
            "Prints each breach by name; exit 0 with 'audit ok', 1 on a breach, 2 when the "
            "database cannot be read."
        ),
    )
    parser.set_defaults(handler=_run_audit)


def _run_audit(args: argparse.Namespace) -> int:
    # Imported on use, so building the `tavla` parser stays free of the database stack.
    from services.wallet.audit_cli import run_audit

    return run_audit(args)


def _register_reconcile(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "reconcile",
        help="ask the payment provider about payments stuck pending; settle or fail each once",
        description=(
            "For every payment of the configured provider (TAVLA_WALLET_PAYMENT_PROVIDER and "
            "its settings) pending for longer than --older-than-minutes in TAVLA_DATABASE_URL, "
            "ask the provider how it stands and apply the answer once. Prints one JSON line "
            "{checked, settled, failed, pending, errors}; exit 0, 1 when some payment could "
            "not be reconciled, 2 on a configuration or database problem."
        ),
    )
    parser.add_argument(
        "--older-than-minutes",
        type=float,
        default=15.0,
        metavar="M",
        help="only payments pending at least this long (default 15)",
    )
    parser.set_defaults(handler=_run_reconcile)


def _run_reconcile(args: argparse.Namespace) -> int:
    from services.wallet.reconcile import run_reconcile

    return run_reconcile(args)


SUBCOMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    _register_quote,
    _register_audit,
    _register_reconcile,
)


def run_quote(args: argparse.Namespace) -> int:
    try:
        quote = _quote(args)
    except WalletError as error:
        print(f"tavla wallet quote: {error}", file=sys.stderr)
        return USAGE_ERROR
    print(json.dumps(quote_as_json(quote)))
    return 0


def _quote(args: argparse.Namespace) -> CommissionQuote:
    stake = Money.parse(args.stake, args.currency)
    ratings = (_rating(args.ratings[0]), _rating(args.ratings[1]))
    schedule = _schedule(args.schedule, args.currency)
    if args.kind == "series":
        if args.cube is not None or args.result is not None:
            raise QuoteInputError(
                "a series is priced by --length; --cube and --result are for single"
            )
        if args.length is None:
            raise QuoteInputError("a series needs --length N, the points the match is played to")
        return quote_match(schedule, Match(stake, args.length), ratings)
    if args.length is not None:
        raise QuoteInputError("--length is for a series; a single game takes --cube and --result")
    win_type = WinType[(args.result or "single").upper()]
    return quote_single_game(schedule, MoneyGame(stake), args.cube or 1, win_type, ratings)


def _rating(text: str) -> Decimal:
    try:
        rating = Decimal(text)
    except InvalidOperation:
        raise QuoteInputError(f"rating {text!r} is not a number such as 1500") from None
    if not rating.is_finite() or rating < 0:
        raise QuoteInputError(f"rating {text!r} must be a non-negative number")
    return rating


def _schedule(version: str | None, currency: str) -> CommissionSchedule:
    if version is not None:
        return schedule_by_version(version)
    # The CLI is an edge of the system, so it may read the clock the domain never does.
    return schedule_in_force(currency, datetime.now(UTC))


def _plain(rate: Decimal) -> str:
    return format(rate.normalize(), "f")


def quote_as_json(quote: CommissionQuote) -> dict[str, str]:
    return {
        "rate": _plain(quote.rate),
        "commission_per_player": str(quote.per_player.to_decimal()),
        "commission_total": str(quote.total.to_decimal()),
        "winner_credit": str(quote.winner_credit.to_decimal()),
        "loser_debit": str(quote.loser_debit.to_decimal()),
        "schedule": quote.schedule_version,
    }
