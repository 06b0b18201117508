"""Jurisdiction rules: the shipped file holds the seed's states; bad files are refused."""

from __future__ import annotations

import pytest

from services.geo.domain.purposes import Purpose
from services.geo.domain.rules import InvalidRules, parse_rules, shipped_rules
from services.kit.iso3166 import Place

# The seed (reference/, "Restricted Activities"): "You may not play if you are a
# resident of the United States states of Arizona, Connecticut, Florida,
# Louisiana, Montana & Vermont". Their ISO 3166-2 codes, written out by hand.
SEED_STATES = {
    "US-AZ": "Arizona",
    "US-CT": "Connecticut",
    "US-FL": "Florida",
    "US-LA": "Louisiana",
    "US-MT": "Montana",
    "US-VT": "Vermont",
}
REAL = {Purpose.DEPOSIT, Purpose.WITHDRAW, Purpose.PLAY_REAL}


def test_the_shipped_rules_have_a_version() -> None:
    assert shipped_rules().version == "tavla-2026-12"


def test_the_shipped_rules_restrict_exactly_the_seed_states_for_real_money() -> None:
    rules = shipped_rules()
    us_states = {c: j for c, j in rules.jurisdictions.items() if c.startswith("US-")}
    assert {c: j.name for c, j in us_states.items()} == SEED_STATES
    for jurisdiction in us_states.values():
        assert jurisdiction.purposes == REAL


def test_fully_blocked_countries_block_every_purpose() -> None:
    rules = shipped_rules()
    for code in ("CU", "IR", "KP", "SY"):
        assert rules.jurisdictions[code].purposes == set(Purpose)


def test_malta_is_not_restricted_and_montana_is() -> None:
    rules = shipped_rules()
    assert rules.restriction(Place("MT"), Purpose.PLAY_REAL) is None
    montana = rules.restriction(Place("US", "US-MT"), Purpose.PLAY_REAL)
    assert montana is not None and montana.code == "US-MT"


def test_new_jersey_is_not_restricted() -> None:
    assert shipped_rules().restriction(Place("US", "US-NJ"), Purpose.DEPOSIT) is None


def test_a_restricted_state_does_not_block_play_money() -> None:
    assert shipped_rules().restriction(Place("US", "US-FL"), Purpose.PLAY_MONEY) is None


def test_regions_matter_in_the_us_for_real_money_only() -> None:
    rules = shipped_rules()
    assert rules.has_restricted_regions("US", Purpose.DEPOSIT)
    assert not rules.has_restricted_regions("US", Purpose.PLAY_MONEY)
    assert not rules.has_restricted_regions("MT", Purpose.DEPOSIT)


GOOD_ENTRY = '[[jurisdiction]]\ncode = "US-FL"\npurposes = ["deposit"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version = ", "not valid TOML"),
        (GOOD_ENTRY, "version"),
        ('version = ""\n' + GOOD_ENTRY, "version"),
        ('version = "v"\njurisdiction = 3\n', "array of tables"),
        ('version = "v"\n[[jurisdiction]]\ncode = "FL"\npurposes = ["deposit"]\n', "ISO 3166"),
        ('version = "v"\n[[jurisdiction]]\ncode = "us-fl"\npurposes = ["deposit"]\n', "upper-case"),
        ('version = "v"\n[[jurisdiction]]\ncode = "US-FL"\npurposes = []\n', "purposes"),
        ('version = "v"\n[[jurisdiction]]\ncode = "US-FL"\npurposes = ["poker"]\n', "poker"),
        ('version = "v"\n[[jurisdiction]]\ncode = "US-FL"\n', "purposes"),
        ('version = "v"\n' + GOOD_ENTRY + GOOD_ENTRY, "listed twice"),
    ],
)
def test_bad_rule_files_are_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidRules, match=message):
        parse_rules(text)


def test_a_minimal_rule_file_parses() -> None:
    rules = parse_rules('version = "v1"\n' + GOOD_ENTRY)
    assert rules.version == "v1"
    assert rules.jurisdictions["US-FL"].purposes == {Purpose.DEPOSIT}
    assert rules.jurisdictions["US-FL"].name == "Florida"
