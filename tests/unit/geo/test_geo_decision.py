"""The decision policy, case by case; every expected value is written out by hand.

Policy (services/geo/README.md): real money fails closed, register and login
flag doubts for review, play money is refused only in fully blocked countries;
the detected place and the declared residence both count.
"""

from __future__ import annotations

import pytest

from services.geo.domain.decision import Check, NetworkFlags, Outcome, decide
from services.geo.domain.purposes import Purpose
from services.geo.domain.rules import shipped_rules
from services.kit.iso3166 import Place

NJ = Place("US", "US-NJ")
FL = Place("US", "US-FL")
MONTANA = Place("US", "US-MT")
MALTA = Place("MT")
US_ONLY = Place("US")
IRAN = Place("IR")
REAL = [Purpose.DEPOSIT, Purpose.WITHDRAW, Purpose.PLAY_REAL]
ACCOUNT = [Purpose.REGISTER, Purpose.LOGIN]


def check(
    purpose: Purpose,
    location: Place | None,
    declared: Place | None,
    network: NetworkFlags | None = None,
) -> tuple[str, list[str]]:
    decision = decide(Check(purpose, location, declared, network), shipped_rules())
    return decision.outcome.value, decision.codes


@pytest.mark.parametrize("purpose", REAL)
def test_new_jersey_resident_in_new_jersey_may_play_for_money(purpose: Purpose) -> None:
    assert check(purpose, NJ, NJ) == ("allow", [])


@pytest.mark.parametrize("purpose", REAL)
def test_malta_resident_in_malta_may_play_for_money(purpose: Purpose) -> None:
    assert check(purpose, MALTA, MALTA) == ("allow", [])


@pytest.mark.parametrize("purpose", REAL)
@pytest.mark.parametrize("state", ["US-AZ", "US-CT", "US-FL", "US-LA", "US-MT", "US-VT"])
def test_each_seed_state_blocks_real_money_where_the_player_is(
    purpose: Purpose, state: str
) -> None:
    assert check(purpose, Place("US", state), NJ) == ("block", ["location_restricted"])


@pytest.mark.parametrize("purpose", REAL)
def test_a_montana_resident_travelling_in_malta_is_blocked(purpose: Purpose) -> None:
    assert check(purpose, MALTA, MONTANA) == ("block", ["residence_restricted"])


def test_a_malta_resident_in_montana_is_blocked_for_being_there() -> None:
    assert check(Purpose.PLAY_REAL, MONTANA, MALTA) == ("block", ["location_restricted"])


def test_a_florida_resident_in_florida_gets_both_reasons() -> None:
    assert check(Purpose.DEPOSIT, FL, FL) == (
        "block",
        ["location_restricted", "residence_restricted"],
    )


@pytest.mark.parametrize("purpose", [*ACCOUNT, Purpose.PLAY_MONEY])
def test_a_florida_resident_may_register_log_in_and_play_for_play_money(purpose: Purpose) -> None:
    assert check(purpose, FL, FL) == ("allow", [])


@pytest.mark.parametrize("purpose", REAL)
def test_an_unplaced_address_blocks_real_money(purpose: Purpose) -> None:
    assert check(purpose, None, NJ) == ("block", ["location_unplaced"])


def test_an_unplaced_address_is_allowed_for_play_money() -> None:
    assert check(Purpose.PLAY_MONEY, None, NJ) == ("allow", [])


@pytest.mark.parametrize("purpose", ACCOUNT)
def test_an_unplaced_address_is_reviewed_at_register_and_login(purpose: Purpose) -> None:
    assert check(purpose, None, NJ) == ("review", ["location_unplaced"])


def test_a_us_address_without_its_state_blocks_real_money() -> None:
    # Some US states are restricted, so the state matters: fail closed.
    assert check(Purpose.PLAY_REAL, US_ONLY, NJ) == ("block", ["location_region_unknown"])


def test_a_malta_address_needs_no_region() -> None:
    assert check(Purpose.PLAY_REAL, MALTA, NJ) == ("allow", [])


def test_a_us_residence_without_its_state_blocks_real_money() -> None:
    assert check(Purpose.WITHDRAW, NJ, US_ONLY) == ("block", ["residence_region_unknown"])


def test_a_missing_residence_blocks_real_money() -> None:
    assert check(Purpose.DEPOSIT, NJ, None) == ("block", ["residence_missing"])


def test_a_missing_residence_is_reviewed_at_registration() -> None:
    assert check(Purpose.REGISTER, NJ, None) == ("review", ["residence_missing"])


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (NetworkFlags(is_anonymous=True, is_anonymous_vpn=True), "anonymous_vpn"),
        (NetworkFlags(is_anonymous=True, is_public_proxy=True), "public_proxy"),
        (NetworkFlags(is_anonymous=True, is_residential_proxy=True), "residential_proxy"),
        (NetworkFlags(is_anonymous=True, is_tor_exit_node=True), "tor_exit_node"),
        (NetworkFlags(is_anonymous=True, is_hosting_provider=True), "hosting_provider"),
        (NetworkFlags(is_anonymous=True), "anonymous_network"),
        (NetworkFlags(is_hosting_provider=True), "hosting_provider"),
    ],
)
def test_each_anonymous_network_blocks_real_money_with_its_own_reason(
    flags: NetworkFlags, code: str
) -> None:
    assert check(Purpose.PLAY_REAL, NJ, NJ, flags) == ("block", [code])
    assert check(Purpose.LOGIN, NJ, NJ, flags) == ("review", [code])
    assert check(Purpose.PLAY_MONEY, NJ, NJ, flags) == ("allow", [])


def test_a_network_with_no_flags_is_clean() -> None:
    assert check(Purpose.DEPOSIT, NJ, NJ, NetworkFlags()) == ("allow", [])


def test_several_doubts_are_all_reported() -> None:
    flags = NetworkFlags(is_anonymous=True, is_anonymous_vpn=True, is_tor_exit_node=True)
    assert check(Purpose.DEPOSIT, None, None, flags) == (
        "block",
        ["location_unplaced", "anonymous_vpn", "tor_exit_node", "residence_missing"],
    )


@pytest.mark.parametrize("purpose", list(Purpose))
def test_a_fully_blocked_country_blocks_everything(purpose: Purpose) -> None:
    assert check(purpose, IRAN, MALTA)[0] == "block"
    assert "location_restricted" in check(purpose, IRAN, MALTA)[1]


@pytest.mark.parametrize("purpose", list(Purpose))
def test_a_resident_of_a_fully_blocked_country_is_blocked_everywhere(purpose: Purpose) -> None:
    assert check(purpose, MALTA, IRAN) == ("block", ["residence_restricted"])


def test_the_decision_names_the_place_rules_version_and_a_sentence() -> None:
    decision = decide(Check(Purpose.DEPOSIT, FL, NJ), shipped_rules())
    assert (decision.country, decision.region, decision.rules_version) == (
        "US",
        "US-FL",
        "tavla-2026-12",
    )
    assert "Florida (US-FL)" in decision.reasons[0].message


def test_an_unplaced_decision_has_empty_country_and_region() -> None:
    decision = decide(Check(Purpose.PLAY_MONEY, None, None), shipped_rules())
    assert (decision.outcome, decision.country, decision.region) == (Outcome.ALLOW, "", "")
