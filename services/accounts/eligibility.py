"""Who may open an account: a residence ISO knows (with its state where states matter) and 18+.

Pure: no I/O, no clock (today's date is an argument). The residence is checked
with the same ISO 3166 parser as the geo service (:mod:`services.kit.iso3166`,
pycountry), so ``MT`` (Malta) and ``US-MT`` (Montana) are never confused and
what accounts stores is what geo's rules name.
"""

from __future__ import annotations

import re
from datetime import date

from services.kit.errors import InvalidArgument
from services.kit.iso3166 import InvalidCode, Place, parse_place

# Countries whose rules differ by subdivision, so a residence there must name one:
# the seed restricts six US states, not the US.
SUBDIVISION_REQUIRED = frozenset({"US"})
ADULT_AGE = 18
# Older than anyone living: a typo ("1026-..."), not a date of birth.
EARLIEST_BIRTH_YEAR = 1900
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_residence(raw: str) -> Place:
    """The declared residence as a place; INVALID_ARGUMENT saying how to fix anything else."""
    if not raw.strip():
        raise InvalidArgument(
            "residence is required: your country as an ISO 3166 code (e.g. MT for Malta), "
            "or for the US your state with its prefix (e.g. US-NJ)"
        )
    try:
        place = parse_place(raw)
    except InvalidCode as error:
        raise InvalidArgument(f"residence: {error}") from None
    if place.region is None and place.country in SUBDIVISION_REQUIRED:
        raise InvalidArgument(
            f"residence {place.country!r} needs your state: give its ISO 3166-2 code with "
            f"the country prefix, e.g. {place.country}-NJ for New Jersey"
        )
    return place


def residence_code(place: Place) -> str:
    """The code stored and signed into tokens: the subdivision if there is one, else the country."""
    return place.region or place.country


def check_date_of_birth(raw: str, today: date) -> date:
    """A real date in ISO form, not in the future, of someone 18 or over on ``today``."""
    text = raw.strip()
    if not text:
        raise InvalidArgument("date_of_birth is required, as YYYY-MM-DD (e.g. 1990-04-21)")
    try:
        if not _ISO_DATE.match(text):
            raise ValueError
        born = date.fromisoformat(text)
    except ValueError:
        raise InvalidArgument(
            f"date_of_birth {raw!r} is not a date in the form YYYY-MM-DD (e.g. 1990-04-21)"
        ) from None
    if born > today or born.year < EARLIEST_BIRTH_YEAR:
        raise InvalidArgument(f"date_of_birth {text} is not a possible date of birth")
    if born > years_before(today, ADULT_AGE):
        raise InvalidArgument(
            f"you must be {ADULT_AGE} or over to open an account "
            f"(born {text}, you turn {ADULT_AGE} on {adult_on(born).isoformat()})"
        )
    return born


def years_before(day: date, years: int) -> date:
    """The same day ``years`` earlier; 29 February becomes 28 February in a common year."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:
        return day.replace(year=day.year - years, day=28)


def adult_on(born: date) -> date:
    """The day someone born on ``born`` turns 18 (1 March for 29 February in a common year)."""
    try:
        return born.replace(year=born.year + ADULT_AGE)
    except ValueError:
        return date(born.year + ADULT_AGE, 3, 1)
