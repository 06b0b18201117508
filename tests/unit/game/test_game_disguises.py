"""Moderation undoes a harasser's disguises before it reads words and links: by
hand-written messages, each disguise and the innocent words next to it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from services.game import moderation
from services.kit.disguises import candidates, link_reading

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def reasons(text: str) -> tuple[str, ...]:
    return moderation.blocked_reasons(text, [], NOW)


@pytest.mark.parametrize(
    "text",
    [
        "l0ser", "id1ot", "cl0wn", "n00b", "1d10t", "s1ut", "b!tch", "a$$hole", "@sshole",
        "i d i o t", "k y s", "sc u m", "l 0 s e r",  # spaced
        "i.d.i.o.t", "L-O-S-E-R", "i_d_i_o_t", "sh-i-t",  # dotted and dashed
        "idiooot", "noooob", "fffuuuccckkk", "LOOOSER",  # stretched
        "l*ser", "sc*mbag", "f***", "sh**",  # starred
        "what a clown", "you idiots", "noobz",  # in a sentence, plural
    ],
)
def test_a_disguised_insult_or_swear_word_is_offensive(text: str) -> None:
    assert reasons(text) == (moderation.OFFENSIVE,), text


@pytest.mark.parametrize(
    "text",
    [
        "Scunthorpe", "class", "assess", "therapist", "cocked dice", "analyse", "Dickens",
        "nice hit", "double?", "gg", "what a roll", "next game?", "g g", "w p", "n i c e",
        "good game", "gooood game", "a looser checker", "nooooo", "55", "24/18 13/11",
        "6-6 again", "$5 table", "@ the bar", "e.g. hit", "i.e. play safe", "3 2 1 go",
        "market loser", "If the loser has not borne off, he is gammoned",
        "** great roll **",
    ],
)
def test_innocent_words_next_to_the_disguises_pass(text: str) -> None:
    assert reasons(text) == (), text


def test_words_are_compared_whole_never_as_parts() -> None:
    found = candidates("Scunthorpe i d i o t, sh-i-t!")
    assert {"scunthorpe", "idiot", "shit"} <= found
    assert "cunt" not in found


@pytest.mark.parametrize(
    "text",
    [
        "visit my-site d0t c0m", "chipz [dot] net", "cheapchips(.)com", "goldchips<dot>com",
        "freechips {dot} xyz", "free-chips[.]net", "visit freechips . c0m",
        "freechips d o t com", "my-site d.o.t c.o.m", "cheap-chips . i o",
        "w w w.chipz.ru", "hxxps://freechips", "h t t p s : / / freechips",
    ],
)
def test_a_disguised_link_is_a_link(text: str) -> None:
    assert moderation.LINK in reasons(text), (text, link_reading(text))


@pytest.mark.parametrize(
    "text", ["nice. gg", "ok. me next", "6.5 pips per roll", "the U.S. rules", "Mr. Smith"]
)
def test_a_full_stop_is_not_a_link(text: str) -> None:
    assert reasons(text) == (), text


def test_the_refusal_says_what_was_wrong_and_that_spelling_does_not_hide_it() -> None:
    text = moderation.refusal(reasons("l0ser, see my-site d0t c0m"))
    assert text.startswith("message not delivered: offensive language is not allowed")
    assert "however they are spelled" in text and "links are not allowed" in text
    assert text.endswith("[offensive_language] [link]")
