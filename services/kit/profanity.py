"""``better-profanity``'s check, with its word set looked up instead of scanned.

The library keeps its ~900 words as a list of ``VaryingString`` (each word with its
leetspeak variants: ``a`` may be written ``@``, ``*`` or ``4`` ...), and tests every
word of a message, and every run of up to 5 words, by comparing it with each entry in
turn: about 5 ms of CPU for a six-word message, on the game service's event loop,
where moves wait behind it (measured; see the game README, "Table chat").

:class:`VariantIndex` answers the same membership question exactly: a candidate's
characters can each stand for only a few letters (the inverse of the library's
character map), so the words it can spell are few, and each is looked up in a set of
the originals. A candidate of very ambiguous characters ("*****": 6^5 readings)
falls back to the library's comparison. The library's own parser, word list,
whitelist and character map are used unchanged; ``tests/unit/game`` checks the index
against the library's comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import product

from better_profanity import Profanity

MAX_READINGS = 4096  # beyond this, compare as the library does


class VariantIndex:
    """A stand-in for ``Profanity.CENSOR_WORDSET`` whose ``in`` is a set look-up."""

    def __init__(self, entries: Sequence[object], char_map: Mapping[str, Sequence[str]]) -> None:
        self._entries = list(entries)
        self._words = frozenset(str(entry) for entry in self._entries)
        # Every substitute is one character, so a variant is as long as its word.
        self._lengths = frozenset(len(word) for word in self._words)
        readings: dict[str, set[str]] = {}
        for letter, substitutes in char_map.items():
            for substitute in substitutes:
                readings.setdefault(substitute, set()).add(letter)
        self._readings = {c: "".join(sorted(letters)) for c, letters in readings.items()}
        self._keys = frozenset(char_map)

    def _letters(self, char: str) -> str:
        """The word-list characters ``char`` can stand for."""
        if char in self._readings:
            return self._readings[char] + ("" if char in self._keys else char)
        return char

    def __contains__(self, candidate: object) -> bool:
        if not isinstance(candidate, str) or len(candidate) not in self._lengths:
            return False
        options = [self._letters(c) for c in candidate]
        count = 1
        for letters in options:
            count *= len(letters)
            if count > MAX_READINGS:
                return any(entry == candidate for entry in self._entries)
        return any("".join(word) in self._words for word in product(*options))

    def __iter__(self) -> Iterator[object]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def indexed(words: Iterable[str] | None = None) -> Profanity:
    """A ``Profanity`` with the library's default list (or ``words``), indexed."""
    profanity = Profanity(words)
    profanity.CENSOR_WORDSET = VariantIndex(profanity.CENSOR_WORDSET, profanity.CHARS_MAPPING)
    return profanity
