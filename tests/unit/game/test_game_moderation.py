"""Table chat moderation before delivery: each refusal reason, by hand-written messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.game import moderation
from services.game.moderation import Recent, blocked_reasons, length_problem, normalised

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def reasons(text: str, recent: list[Recent] | None = None) -> tuple[str, ...]:
    """Moderation's verdict on ``text`` as a player sent it (the chat reads it so)."""
    return blocked_reasons(text, recent or [], NOW)


def test_ordinary_table_talk_passes() -> None:
    for text in (
        "gl hf",
        "nice roll!",
        "well played, that was a tough double",
        "I should have hit from the bar 25/20",
        "brb 1 min",
        "assassin move",  # "ass" inside a word is not offensive (library's word boundaries)
        "Scunthorpe",
    ):
        assert reasons(text) == (), text


def test_offensive_language_with_its_disguises_is_blocked() -> None:
    for text in ("you are a fucking idiot", "f u c k you", "sh1t player"):
        assert moderation.OFFENSIVE in reasons(text), text


# Cyrillic look-alikes of Latin letters, written as escapes (they look the same on screen).
CYRILLIC = {"a": "\u0430", "e": "\u0435", "o": "\u043e", "p": "\u0440", "c": "\u0441",
            "x": "\u0445"}
RLO, PDF = "\u202e", "\u202c"


def cyrillic(text: str) -> str:
    """``text`` with every letter that has a Cyrillic look-alike written in Cyrillic."""
    return "".join(CYRILLIC.get(char, char) for char in text)


def fullwidth(text: str) -> str:
    return "".join(chr(ord(char) + 0xFEE0) if char.isalpha() else char for char in text)


def test_look_alike_letters_and_direction_tricks_do_not_hide_offensive_words() -> None:
    disguised = {
        "Cyrillic c": "you are a fu\u0441king idiot",
        "Cyrillic a/e/o/p/c/x": cyrillic("sex porn cock poop crap pecker xxx"),
        "all Cyrillic look-alikes": cyrillic("pecker"),
        "fullwidth letters": fullwidth("fuck") + " you",
        "a right-to-left override": f"you {RLO}kcuf{PDF} idiot",
        "an override to the end": f"{RLO}tihs",
        "zero-width spaces": "f\u200bu\u200bc\u200bk you",
        "a soft hyphen and a word joiner": "sh\u00adi\u2060t",
        "Cyrillic and an override": f"{RLO}{cyrillic('porn')[::-1]}{PDF}",
    }
    for what, text in disguised.items():
        assert moderation.OFFENSIVE in reasons(text), what


def test_look_alikes_fold_for_links_and_solicitation_too() -> None:
    assert moderation.LINK in reasons(cyrillic("see www.chipdeals.example"))
    assert moderation.SOLICITATION in reasons(cyrillic("add me on telegram"))


def test_other_scripts_and_accents_are_conversation_not_disguise() -> None:
    for text in ("\u043f\u0440\u0438\u0432\u0435\u0442, \u0443\u0434\u0430\u0447\u0438",
                 "\u03ba\u03b1\u03bb\u03ae \u03c4\u03cd\u03c7\u03b7", "caf\u00e9 na\u00efve",
                 "\u05e9\u05dc\u05d5\u05dd", "good game \U0001f3b2"):
        assert reasons(text) == (), text


def test_the_delivered_text_carries_no_invisible_controls() -> None:
    assert normalised(f"you {RLO}kcuf{PDF}\u200b idiot") == "you kcuf idiot"
    assert normalised("\ufeffgl\u2066 hf\u2069") == "gl hf"
    assert normalised(fullwidth("gg")) == "gg"


def test_links_and_solicitation_are_blocked() -> None:
    assert reasons("see https://example.test/x") == (moderation.LINK,)
    assert reasons("visit www.chipdeals.example now") == (moderation.LINK,)
    assert reasons("best prices at chipdeals dot com") == (moderation.LINK,)
    assert reasons("selling cheap chips, message me") == (moderation.SOLICITATION,)
    assert reasons("use promo code WIN50") == (moderation.SOLICITATION,)
    assert reasons("add me on telegram") == (moderation.SOLICITATION,)
    assert reasons("earn money fast") == (moderation.SOLICITATION,)
    # both, and the refusal names both
    both = reasons("buy chips at cheapchips.gg")
    assert both == (moderation.LINK, moderation.SOLICITATION)
    text = moderation.refusal(both)
    assert "links are not allowed" in text and "[link] [solicitation]" in text


def test_a_repeat_within_a_minute_of_one_of_the_last_three_is_blocked() -> None:
    recent = [Recent("Nice roll", NOW - timedelta(seconds=30))]
    assert reasons("nice roll!!", recent) == (moderation.REPETITION,)
    assert reasons("NICE   ROLL", recent) == (moderation.REPETITION,)
    # a minute and a second later it is conversation again
    old = [Recent("Nice roll", NOW - timedelta(seconds=61))]
    assert reasons("nice roll", old) == ()
    # only the last three messages count
    pushed = [
        Recent("nice roll", NOW - timedelta(seconds=40)),
        Recent("a", NOW - timedelta(seconds=30)),
        Recent("b", NOW - timedelta(seconds=20)),
        Recent("c", NOW - timedelta(seconds=10)),
    ]
    assert reasons("nice roll", pushed) == ()
    assert reasons("!!!", [Recent("???", NOW)]) == ()  # no letters: nothing to compare


def test_length_and_blank() -> None:
    assert normalised("  a \n\t b  ") == "a b"
    assert length_problem("") == "a chat message cannot be empty"
    assert length_problem("x" * 280) is None
    assert length_problem("x" * 281) == (
        "a chat message has at most 280 characters (this one has 281)"
    )
