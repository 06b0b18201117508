"""What a chat message reads as, for moderation: look-alike letters and direction tricks undone.

A word list matches letters, so a message can dodge it by looking like a listed word
without being one: Cyrillic a/e/o/p/c/x (U+0430, U+0435, U+043E, U+0440, U+0441,
U+0445) for the Latin letters they look like, fullwidth
or mathematical letters, zero-width characters between letters, or a right-to-left
override (U+202E) that shows "kcuf" as "fuck". A reading undoes all of these:

1. Unicode NFKC (fullwidth and mathematical letters to plain ones, ligatures split);
2. direction overrides applied as a screen shows them (:func:`as_shown`);
3. invisible characters removed (:data:`INVISIBLE`: bidi controls and marks,
   zero-width spaces and joiners, the word joiner, the BOM, the soft hyphen);
4. every other-script letter that Unicode's confusables data lists as a look-alike
   of a Latin letter replaced by that letter (``confusable-homoglyphs``, which ships
   Unicode's confusables.txt; Latin and common characters are kept).

Moderation checks both the message as stored (invisibles removed, order kept) and as
shown, so a trick in either direction is caught.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables

# Bidi embeddings, overrides and isolates, with their ends (Unicode's UAX #9).
LRE, RLE, PDF, LRO, RLO = "\u202a", "\u202b", "\u202c", "\u202d", "\u202e"
LRI, RLI, FSI, PDI = "\u2066", "\u2067", "\u2068", "\u2069"
_OPENERS = {LRE: PDF, RLE: PDF, LRO: PDF, RLO: PDF, LRI: PDI, RLI: PDI, FSI: PDI}
INVISIBLE = frozenset(
    "\u00ad\u061c\u180e\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff"
    + "".join(_OPENERS) + PDF + PDI
)
_DROP_INVISIBLE = str.maketrans(dict.fromkeys(INVISIBLE))


def without_invisibles(text: str) -> str:
    """``text`` less its invisible characters (:data:`INVISIBLE`), in its own order."""
    return text.translate(_DROP_INVISIBLE)


def as_shown(text: str) -> str:
    """``text`` in the order a screen shows it under its direction overrides.

    Within a right-to-left override (RLO ... PDF, or to the end) the characters are
    shown in reverse, nested runs each as one piece; a left-to-right override or an
    embedding or isolate inside it keeps its own order. Only overrides are applied:
    the letters a word list looks for are Latin, whose order nothing else changes.
    The controls themselves are kept (removed with the other invisibles).
    """
    pieces, _ = _run(text, 0, closer=None, reverse=False)
    return "".join(pieces)


def _run(text: str, start: int, closer: str | None, reverse: bool) -> tuple[list[str], int]:
    """The pieces of one run from ``start`` to its ``closer`` (or the end): (pieces, next)."""
    pieces: list[str] = []
    index = start
    while index < len(text):
        char = text[index]
        index += 1
        if char == closer:
            break
        if char in _OPENERS:
            inner, index = _run(text, index, _OPENERS[char], reverse=char == RLO)
            pieces.append(char + "".join(inner) + _OPENERS[char])
        else:
            pieces.append(char)
    return (pieces[::-1] if reverse else pieces), index


@lru_cache(maxsize=4096)  # bounded: a sender chooses the characters
def latin_lookalike(char: str) -> str:
    """The Latin letter(s) ``char`` is a look-alike of, or ``char`` itself."""
    if char.isascii():
        return char
    found = confusables.is_confusable(char, greedy=True, preferred_aliases=["latin"])
    if not found:
        return char
    for glyph in found[0]["homoglyphs"]:
        if glyph["n"].startswith("LATIN ") and glyph["c"].isascii() and glyph["c"].isalpha():
            return str(glyph["c"])
    return char


def _folded(text: str) -> str:
    return "".join(latin_lookalike(char) for char in without_invisibles(text))


def readings(text: str) -> tuple[str, ...]:
    """What ``text`` reads as, stored and as shown, look-alikes folded (one if the same)."""
    plain = unicodedata.normalize("NFKC", text)
    stored, shown = _folded(plain), _folded(as_shown(plain))
    return (stored,) if stored == shown else (stored, shown)
