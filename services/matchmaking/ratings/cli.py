"""``tavla rating update``: one FIBS rating update from the command line, as JSON.

``tavla rating update --ratings R1 R2 --experience E1 E2 --length N --winner 1|2``
prints ``{"ratings": [new1, new2], "changes": [d1, d2]}`` rounded to 2 decimals.
Bad input (a length below 1, a winner other than 1 or 2, negative experience,
anything that is not a number, a missing option) is exit status 2 with a one-line
message, never a traceback or a usage screen.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import TYPE_CHECKING, NoReturn

from services.kit.errors import InvalidArgument
from services.matchmaking.domain.ratings import Standing, rate_win

if TYPE_CHECKING:
    # Only subscriptable for the type checker on Python 3.11.
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]
USAGE_ERROR = 2
PROG = "tavla rating update"


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{PROG}: {message}\n")


def register(subparsers: Subparsers) -> None:
    rating = subparsers.add_parser("rating", help="ratings: work out a FIBS rating update")
    commands = rating.add_subparsers(
        dest="rating_command", required=True, metavar="SUBCOMMAND", parser_class=OneLineParser
    )
    update = commands.add_parser(
        "update",
        help="the two ratings after a match, as JSON",
        description='Print {"ratings": [new1, new2], "changes": [d1, d2]} for one match.',
    )
    # Read as text and converted below, so that every bad value gets the same one-line answer.
    update.add_argument("--ratings", nargs=2, required=True, metavar=("R1", "R2"))
    update.add_argument("--experience", nargs=2, required=True, metavar=("E1", "E2"))
    update.add_argument(
        "--length", required=True, metavar="N", help="match length; a money game counts 1"
    )
    update.add_argument("--winner", required=True, metavar="1|2")
    update.set_defaults(handler=run_update)


def _rating(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidArgument(f"rating {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InvalidArgument(f"rating {text!r} is not a finite number")
    return value


def _whole(text: str, what: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidArgument(f"{what} {text!r} is not a whole number") from None


def run_update(args: argparse.Namespace) -> int:
    try:
        first, second = (
            Standing(_rating(r), _whole(e, "experience"))
            for r, e in zip(args.ratings, args.experience, strict=True)
        )
        winner = _whole(args.winner, "winner")
        if winner not in (1, 2):
            raise InvalidArgument(f"the winner is 1 or 2, got {winner}")
        update = rate_win(first, second, _whole(args.length, "length"), winner - 1)
    except InvalidArgument as error:
        print(f"{PROG}: {error.message}", file=sys.stderr)
        return USAGE_ERROR
    output = {
        "ratings": [round(standing.rating, 2) for standing in update.after],
        "changes": [round(change, 2) for change in update.changes],
    }
    print(json.dumps(output))
    return 0
