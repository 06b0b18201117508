"""The indexed word set answers exactly as better-profanity's own comparison does."""

from __future__ import annotations

import random

from better_profanity import Profanity
from hypothesis import given, settings
from hypothesis import strategies as st

from services.kit.profanity import VariantIndex, indexed

LIBRARY = Profanity()
INDEXED = indexed()
ENTRIES = list(LIBRARY.CENSOR_WORDSET)
WORDS = sorted(str(entry) for entry in ENTRIES)
INDEX = VariantIndex(ENTRIES, LIBRARY.CHARS_MAPPING)
ALPHABET = "abcdefghijklmnopqrstuvwxyz@*4103$57 "


def library_says(candidate: str) -> bool:
    return any(entry == candidate for entry in ENTRIES)


def disguised(word: str, rng: random.Random) -> str:
    """The word with some letters replaced by one of the library's substitutes."""
    mapping = LIBRARY.CHARS_MAPPING
    return "".join(
        rng.choice(mapping[c]) if c in mapping and rng.random() < 0.5 else c for c in word
    )


@given(st.sampled_from(WORDS), st.randoms(use_true_random=False))
@settings(max_examples=400, deadline=None)
def test_every_disguise_of_a_listed_word_is_found(word: str, rng: random.Random) -> None:
    candidate = disguised(word, rng)
    assert library_says(candidate)
    assert candidate in INDEX


@given(st.text(alphabet=ALPHABET, min_size=1, max_size=9))
@settings(max_examples=400, deadline=None)
def test_any_string_gets_the_libraries_answer(candidate: str) -> None:
    assert (candidate in INDEX) == library_says(candidate)


@given(st.lists(st.sampled_from([*WORDS[:40], "nice", "roll", "gg", "well", "played"]), max_size=8))
@settings(max_examples=100, deadline=None)
def test_whole_messages_get_the_libraries_verdict(words: list[str]) -> None:
    text = " ".join(words)
    assert INDEXED.contains_profanity(text) == LIBRARY.contains_profanity(text)


def test_very_ambiguous_candidates_fall_back_to_the_library() -> None:
    # "*" stands for seven characters: 7**5 readings is past the index's bound.
    for candidate in ("*****", "******", "sh**", "f*ck", "@$$", "*1*1*1*"):
        assert (candidate in INDEX) == library_says(candidate), candidate
