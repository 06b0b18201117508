"""Who may open an account: residence codes (the US needs its state) and 18 or over.

Expected dates are worked out by hand: someone born on 21 April 2008 turns 18 on
21 April 2026; someone born on 29 February 2008 turns 18 on 1 March 2026 (2026
has no 29 February).
"""

from __future__ import annotations

from datetime import date

import pytest

from services.accounts.eligibility import check_date_of_birth, check_residence, residence_code
from services.kit.errors import InvalidArgument
from services.kit.iso3166 import Place


@pytest.mark.parametrize(
    ("raw", "place", "code"),
    [("MT", Place("MT"), "MT"), ("us-mt", Place("US", "US-MT"), "US-MT"),
     (" US-NJ ", Place("US", "US-NJ"), "US-NJ"), ("GB", Place("GB"), "GB")],
)
def test_a_residence_is_a_country_or_a_prefixed_subdivision(
    raw: str, place: Place, code: str
) -> None:
    assert check_residence(raw) == place
    assert residence_code(place) == code


def test_malta_is_never_montana() -> None:
    assert residence_code(check_residence("MT")) == "MT"
    assert residence_code(check_residence("US-MT")) == "US-MT"


@pytest.mark.parametrize(
    ("raw", "message"),
    [("", "residence is required"), ("   ", "residence is required"),
     ("US", "'US' needs your state"), ("us", "'US' needs your state"),
     ("NJ", "ISO 3166"), ("US-XX", "ISO 3166"), ("Malta", "ISO 3166"), ("USA", "ISO 3166")],
)
def test_a_bad_residence_is_refused_saying_how_to_fix_it(raw: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_residence(raw)


def test_the_us_alone_asks_for_a_state_by_example() -> None:
    with pytest.raises(InvalidArgument, match="US-NJ"):
        check_residence("US")


def test_eighteen_on_the_birthday_not_the_day_before() -> None:
    assert check_date_of_birth("2008-04-21", date(2026, 4, 21)) == date(2008, 4, 21)
    with pytest.raises(InvalidArgument, match="turn 18 on 2026-04-21"):
        check_date_of_birth("2008-04-21", date(2026, 4, 20))


def test_born_on_29_february_is_18_on_1_march_in_a_common_year() -> None:
    with pytest.raises(InvalidArgument, match="turn 18 on 2026-03-01"):
        check_date_of_birth("2008-02-29", date(2026, 2, 28))
    assert check_date_of_birth("2008-02-29", date(2026, 3, 1)) == date(2008, 2, 29)
    # In a leap year the birthday itself is the day.
    with pytest.raises(InvalidArgument, match="turn 18 on 2022-03-01"):
        check_date_of_birth("2004-02-29", date(2022, 2, 28))
    assert check_date_of_birth("2012-02-29", date(2030, 3, 1)) == date(2012, 2, 29)


def test_on_29_february_someone_born_on_28_february_18_years_before_is_18() -> None:
    assert check_date_of_birth("2010-02-28", date(2028, 2, 29)) == date(2010, 2, 28)
    with pytest.raises(InvalidArgument, match="18 or over"):
        check_date_of_birth("2010-03-01", date(2028, 2, 29))


@pytest.mark.parametrize(
    ("raw", "message"),
    [("", "date_of_birth is required"), ("1990-4-21", "YYYY-MM-DD"),
     ("21/04/1990", "YYYY-MM-DD"), ("19900421", "YYYY-MM-DD"), ("1990-02-30", "YYYY-MM-DD"),
     ("2027-01-01", "not a possible date of birth"), ("1026-01-01", "not a possible")],
)
def test_a_bad_date_of_birth_is_refused_saying_why(raw: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        check_date_of_birth(raw, date(2026, 6, 1))
