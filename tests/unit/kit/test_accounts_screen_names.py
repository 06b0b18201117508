"""Screen-name rules (services/accounts/screen_names.py): what a name may be, and when two
names are one."""

from __future__ import annotations

import pytest

from services.accounts.domain import Account, AccountStatus, Registration
from services.accounts.screen_names import canonical, check_screen_name
from services.kit.errors import FailedPrecondition, InvalidArgument
from tests.unit.kit.test_accounts_domain import NOW

CYRILLIC_A = "\u0430"
GREEK_CAPITAL_TAU, GREEK_CAPITAL_ALPHA = "\u03a4", "\u0391"


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("paul", "Paul"),
        ("paul", "PAUL"),
        ("paul", f"P{CYRILLIC_A}ul"),  # a Cyrillic a
        ("paul", "\uff30\uff41\uff55\uff4c"),  # fullwidth
        ("Bill", "BiII"),  # capital I is a small l in many fonts
        ("Bill", "B1ll"),
        ("tom", "t0m"),
        ("modern", "rnodern"),
        ("wendy", "vvendy"),
        ("john-doe", "john_doe"),
    ],
)
def test_names_a_reader_cannot_tell_apart_are_one_name(one: str, other: str) -> None:
    assert canonical(one) == canonical(other)


@pytest.mark.parametrize(("one", "other"), [("paul", "paula"), ("johndoe", "john_doe"),
                                            ("Jurgen", "J\u00fcrgen"), ("ann", "anne")])
def test_different_names_stay_different(one: str, other: str) -> None:
    assert canonical(one) != canonical(other)


@pytest.mark.parametrize("name", ["ann", "Paul_1987", "gammon-queen", "J\u00fcrgen",
                                  "\u0395\u03bb\u03ad\u03bd\u03b7", "x" * 20, "assassin"])
def test_good_names_are_kept_as_written(name: str) -> None:
    assert check_screen_name(f" {name} ") == name


def test_fullwidth_letters_are_stored_plain() -> None:
    assert check_screen_name("\uff30\uff41\uff55\uff4c") == "Paul"


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("ab", "3 to 20 characters"), ("ab", "(this one has 2 characters)"),
        ("x" * 21, "this one has 21"),
        ("a b c", "not ' '"),
        ("ann.smith", "not '.'"),
        ("ann@home", "not '@'"),
        ("ann\u200bsmith", "not '\\u200b'"),  # a zero-width space
    ],
)
def test_length_and_characters_are_checked(name: str, phrase: str) -> None:
    with pytest.raises(InvalidArgument, match="screen name") as error:
        check_screen_name(name)
    assert phrase in error.value.message


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("admin", "admin"), ("Adm1n", "admin"), ("SuperAdmin", "admin"),
        ("Tavla_Support", "support"), ("TAVLA", "tavla"),
        (f"{GREEK_CAPITAL_TAU}{GREEK_CAPITAL_ALPHA}VLA", "tavla"),  # Greek T and A
        ("t-a-v-l-a", "tavla"), ("Moderator7", "moderator"), ("staff_bob", "staff"),
        ("0fficial", "official"),
    ],
)
def test_staff_names_are_refused_in_any_spelling(name: str, word: str) -> None:
    with pytest.raises(InvalidArgument, match="kept for the site's staff") as error:
        check_screen_name(name)
    assert repr(word) in error.value.message


@pytest.mark.parametrize("name", ["shit", "sh1t", "fuck_you", "f-u-c-k", "BigFuck",
                                  "\u0455h\u0456t"])  # Cyrillic dze and i
def test_offensive_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidArgument, match="offensive"):
        check_screen_name(name)


def test_registration_takes_the_display_name_as_the_screen_name() -> None:
    registration = Registration.parse("ann@example.com", "Ann_1", "MT", "1990-04-21",
                                      NOW.date())
    assert registration.display_name == "Ann_1"
    with pytest.raises(InvalidArgument, match="staff"):
        Registration.parse("ann@example.com", "AnnAdmin", "MT", "1990-04-21", NOW.date())


def test_a_screen_name_is_chosen_once() -> None:
    legacy = Account("a-1", "ann@example.com", "ann.smith", "MT", AccountStatus.ACTIVE, "x",
                     NOW)
    chosen = legacy.choose_screen_name("ann_smith")
    assert (chosen.display_name, chosen.screen_name) == ("ann_smith", "ann_smith")
    with pytest.raises(FailedPrecondition, match="chosen once"):
        chosen.choose_screen_name("ann_jones")


def test_a_letter_may_fold_to_several() -> None:
    # Capital Cyrillic yeru reads "bl": the canonical form can be longer than the name.
    name = check_screen_name("\u042b" * 20)
    assert canonical(name) == "bl" * 20
