"""Readings of a chat message for moderation: look-alike letters folded, direction
overrides applied as shown, invisible characters removed."""

from __future__ import annotations

from services.kit.lookalikes import as_shown, latin_lookalike, readings, without_invisibles

LRO, RLO, PDF, RLI, PDI = "\u202d", "\u202e", "\u202c", "\u2067", "\u2069"


def test_cyrillic_and_greek_look_alikes_read_as_latin_letters() -> None:
    cyrillic = "\u0430\u0435\u043e\u0440\u0441\u0445\u0410\u0415\u041e\u0420\u0421\u0425"
    assert "".join(latin_lookalike(c) for c in cyrillic) == "aeopcxAEOPCX"
    greek = "\u03bf\u03c1\u0391\u039f"  # omicron, rho, Alpha, Omicron
    assert "".join(latin_lookalike(c) for c in greek) == "opAO"


def test_latin_letters_digits_and_unlike_letters_stay_as_they_are() -> None:
    for char in ("a", "Z", "7", "\u00e9", "\u00df", "\u0434", "\u05e9", "\U0001f3b2"):
        assert latin_lookalike(char) == char, char


def test_an_override_is_read_as_a_screen_shows_it() -> None:
    assert as_shown(f"ab{RLO}cde{PDF}fg") == f"ab{RLO}edc{PDF}fg"
    assert as_shown(f"{RLO}cde") == f"{RLO}edc{PDF}"  # no end: to the end of the text
    # A left-to-right override inside keeps its order, and moves as one piece.
    assert as_shown(f"{RLO}ab{LRO}cd{PDF}ef{PDF}") == f"{RLO}fe{LRO}cd{PDF}ba{PDF}"
    # An isolate does not reverse Latin letters.
    assert as_shown(f"x{RLI}abc{PDI}y") == f"x{RLI}abc{PDI}y"
    assert as_shown("no controls") == "no controls"


def test_invisible_characters_are_removed_and_the_order_kept() -> None:
    text = f"a\u200bb\u200cc\u200dd\u2060e\ufefff\u00adg{RLO}h{PDF}\u200e\u200f\u061ci"
    assert without_invisibles(text) == "abcdefghi"


def test_readings_are_the_stored_order_and_the_shown_one_when_they_differ() -> None:
    assert readings("plain words") == ("plain words",)
    assert readings("\uff46\uff55\uff43\uff4b") == ("fuck",)  # fullwidth, by NFKC
    assert readings(f"a {RLO}kcuf{PDF} b") == ("a kcuf b", "a fuck b")
    assert readings(f"{RLO}\u0445\u0430\u0435{PDF}") == ("xae", "eax")
