"""The arithmetic of a knockout field: bracket size, rounds, and who shares which places.

A field of ``n`` entrants plays in a bracket of ``S`` slots, the smallest power of two
not below ``n``; the ``S - n`` byes all fall in the first round (never two in one
match), so every later round is full. The players entering round ``r`` are ``n`` for
the first round and ``S / 2**(r-1)`` after it; the players who lose in round ``r``
share the places between those who enter the next round and those who entered this
one: the final's loser is 2nd, the semi-final losers share 3rd-4th, the
quarter-final losers 5th-8th, and the first round's losers ``S/2 + 1``-th to
``n``-th.
"""

from __future__ import annotations

from typing import Final

from services.kit.errors import InvalidArgument

MIN_FIELD: Final = 2
# The largest field a tournament may have: ten rounds of knockout.
MAX_FIELD: Final = 1024


class FieldError(InvalidArgument):
    """A field size outside 2..1024."""


def require_field(field: int) -> int:
    if isinstance(field, bool) or not isinstance(field, int):
        raise FieldError(f"a field is a whole number of entrants, not {field!r}")
    if not MIN_FIELD <= field <= MAX_FIELD:
        raise FieldError(
            f"a knockout needs {MIN_FIELD} to {MAX_FIELD} entrants, not {field}"
        )
    return field


def bracket_size(field: int) -> int:
    """The smallest power of two not below ``field``: the bracket's slots."""
    require_field(field)
    return 1 << (field - 1).bit_length()


def round_count(field: int) -> int:
    """How many rounds the knockout of ``field`` entrants plays (the final is the last)."""
    return bracket_size(field).bit_length() - 1


def entering(field: int, round_number: int) -> int:
    """How many players take part in round ``round_number`` (1-based); 1 after the final."""
    rounds = round_count(field)
    if not 1 <= round_number <= rounds + 1:
        raise FieldError(f"a field of {field} plays rounds 1 to {rounds}, not {round_number}")
    if round_number == 1:
        return field
    return bracket_size(field) >> (round_number - 1)


def places_of_losers(field: int, round_number: int) -> tuple[int, int]:
    """The places (best, worst) shared by the players who lose in ``round_number``."""
    return entering(field, round_number + 1) + 1, entering(field, round_number)


def finishing_tiers(field: int) -> tuple[tuple[int, int], ...]:
    """Every shared range of places from the winner down: (1, 1), (2, 2), (3, 4), ..."""
    losers = [places_of_losers(field, r) for r in range(round_count(field), 0, -1)]
    return ((1, 1), *losers)


def complete_tier_ends(field: int) -> tuple[int, ...]:
    """The places after which a cut splits no tie (1, 2, 4, ..., S/2): what prizes may pay."""
    half = bracket_size(field) // 2
    return tuple(1 << power for power in range(half.bit_length()))
