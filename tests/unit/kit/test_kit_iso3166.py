"""ISO codes (services/kit/iso3166.py): Malta is never Montana; only codes ISO knows pass."""

from __future__ import annotations

import pytest

from services.kit.iso3166 import InvalidCode, Place, parse_place, place_from_parts


def test_malta_and_montana_are_different_places() -> None:
    assert parse_place("MT") == Place("MT")
    assert parse_place("US-MT") == Place("US", "US-MT")


def test_codes_are_normalised_to_upper_case() -> None:
    assert parse_place(" us-fl ") == Place("US", "US-FL")


@pytest.mark.parametrize(
    "text",
    ["", "M", "XX", "USA", "US-", "US-XX", "FL", "ZZ-FL", "US_FL", "MT-MT", "1A"],
)
def test_unknown_or_malformed_codes_are_refused(text: str) -> None:
    # "FL" is not a country (Florida needs its prefix); "US-XX" is no US state.
    with pytest.raises(InvalidCode, match="ISO 3166"):
        parse_place(text)


def test_a_database_subdivision_gets_its_country_prefix() -> None:
    assert place_from_parts("US", "MT") == Place("US", "US-MT")
    assert place_from_parts("MT", None) == Place("MT")


def test_a_database_subdivision_iso_does_not_know_keeps_the_country() -> None:
    assert place_from_parts("US", "QQ") == Place("US")


def test_a_database_without_a_known_country_places_nothing() -> None:
    assert place_from_parts(None, "FL") is None
    assert place_from_parts("XX", None) is None
