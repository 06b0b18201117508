"""What a chat message says once a harasser's disguises are undone, for moderation.

A word list matches words; a harasser who knows it writes around it: digits and symbols
for letters ("l0ser", "id1ot", "a$$hole"), letters spaced or dotted apart ("i d i o t",
"i.d.i.o.t", "L-O-S-E-R"), letters stretched ("idiooot", "fffuuuccckkk"), stars for
letters ("l*ser", "f***"), and links written out ("my-site d0t c0m", "chipz [dot] net",
"cheapchips(.)com", "freechips . c o m"). Look-alike letters of other scripts and
invisible characters are undone before this, by :mod:`services.kit.lookalikes`.

**Offensive words** (:func:`has_offensive_word`). The candidates are the message's
words, and the words that runs of single letters spell when joined ("i d i o t" ->
"idiot", "sc u m" -> "scum"); a word's inner dots, dashes and underscores are dropped
("sh-i-t"). Each candidate is compared whole, never as a substring (so "Scunthorpe",
"class", "assess" and "therapist" are words of their own) with two lists: the
``better-profanity`` list the game already uses, and :data:`HOUSE_INSULTS`, the insults
players throw at each other at a table, which a list of swear words does not hold. A
candidate matches a listed word when, character by character, it is that word with:

- look-alike digits and symbols (:data:`LEET`: 0 o, 1 i or l, 3 e, 4 a, 5 s, 7 t, 8 b,
  9 g, @ a, $ s, ! i, | l or i, + t, euro sign e);
- letters stretched, when the candidate stretches one letter at least three times
  ("idiooot", "noooob"): two ("good", "looser") is ordinary spelling, and only listed
  words of four letters or more are matched stretched ("gooood" is not "god");
- a star for one letter ("l*ser"); a word starred out after its first letters
  ("f***", "sh**") is a censored swear word on its own.

A few backgammon terms hold a listed word and are read without it (:data:`TABLE_TERMS`:
"the loser" of a game and a "market loser" are the game's words, not insults).

**Links** (:func:`link_reading`). The text with its disguised dots made dots again
("[dot]", "(dot)", "{dot}", "<dot>", "(.)", "[.]", the word "dot"), letters spaced apart
joined ("c o m"), and digits in words read as letters ("d0t c0m"). Moderation's link
pattern then reads it; a dot with spaces on both sides counts ("freechips . com"), a
full stop ending a sentence does not ("nice. gg").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from itertools import groupby

from better_profanity import Profanity

# Insults at a player that the swear-word list does not hold, in their plain spelling
# (disguises are undone before the comparison). Chosen as words that are insults
# whatever the context at a backgammon table; words with an innocent table meaning
# ("dumb luck", "my board is trash", "a weak player") are left out, since refusing
# them would refuse ordinary talk.
HOUSE_INSULTS = frozenset(
    {
        "idiot", "loser", "clown", "noob", "newb", "stoopid", "imbecile",
        "cretin", "dimwit", "halfwit", "nitwit", "dunce", "buffoon", "numpty", "pillock",
        "scumbag", "kys", "retarded", "braindead", "dumbo", "lowlife",
    }
)
# Backgammon phrases that hold a listed word innocently, removed before words are read:
# "the loser" of a game (the rules' own term: "if the loser has not borne off...") and a
# "market loser" (a sequence that loses the market for a double).
TABLE_TERMS = re.compile(r"\b(?:the|market)[\s-]+losers?\b", re.IGNORECASE)

# The letters a digit or symbol stands for in leetspeak.
LEET: dict[str, str] = {
    "0": "o", "1": "il", "3": "e", "4": "a", "5": "s", "7": "t", "8": "b", "9": "g",
    "@": "a", "$": "s", "!": "i", "|": "li", "+": "t", "\u20ac": "e",
}
STRETCH = 3  # a letter written this many times in a row is stretched, not spelled
MIN_STRETCHED = 4  # listed words shorter than this are not matched stretched
MAX_JOINED = 12  # tokens joined into one candidate, at most

_SEPARATORS = re.compile(r"(?<=\w)[._\-~'](?=\w)")
# Punctuation around a word (with typographic quotes, written as escapes).
_EDGES = ".,;:?!\"'()[]{}<>-_~\u00ab\u00bb\u201c\u201d\u2018\u2019\u2026"
_WORDS = re.compile(r"[^\s,;:?\"()\[\]{}<>/\\]+")
_CENSORED = re.compile(r"[a-z]{1,2}\*{2,}[a-z]?")


def _runs(word: str) -> list[tuple[str, int]]:
    return [(char, len(list(group))) for char, group in groupby(word)]


def _shape(char: str) -> str:
    """The class a character falls in for indexing: a letter, or the first letter a
    look-alike stands for (``1``, ``!``, ``|`` and ``l`` all index as ``i``)."""
    letter = LEET.get(char, char)[0]
    return "i" if letter == "l" else letter


def _stands_for(char: str, letter: str) -> bool:
    return char == letter or letter in LEET.get(char, "")


class WordList:
    """Listed words, found through their disguises; exact on whole candidates."""

    def __init__(self, words: Iterable[str]) -> None:
        self._by_key: dict[str, list[tuple[str, list[tuple[str, int]]]]] = {}
        for word in {w for w in words if w.isalpha() and len(w) >= 3}:
            runs = _runs(word)
            key = "".join(_shape(char) for char, _ in runs)
            self._by_key.setdefault(key, []).append((word, runs))

    def __contains__(self, candidate: object) -> bool:
        if not isinstance(candidate, str) or not any(c.isalpha() for c in candidate):
            return False
        if "*" in candidate:
            return self._starred(candidate)
        runs = _runs(candidate)
        listed = self._by_key.get("".join(_shape(char) for char, _ in runs), ())
        stretched = any(count >= STRETCH for _, count in runs)
        return any(_spells(candidate, runs, word, theirs, stretched) for word, theirs in listed)

    def _starred(self, candidate: str) -> bool:
        """A word with a star for one of its letters ("l*ser"), or starred out ("f***")."""
        if _CENSORED.fullmatch(candidate):
            return True
        if candidate.count("*") != 1 or len(candidate) < 4:
            return False
        return any(candidate.replace("*", letter) in self for letter in _ALPHABET)


_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def _spells(
    candidate: str,
    runs: list[tuple[str, int]],
    word: str,
    theirs: list[tuple[str, int]],
    stretched: bool,
) -> bool:
    """``candidate`` is ``word`` in look-alikes, stretched only if it stretches a letter."""
    if len(candidate) == len(word):
        return all(_stands_for(c, w) for c, w in zip(candidate, word, strict=True))
    if not stretched or len(word) < MIN_STRETCHED or len(runs) != len(theirs):
        return False
    return all(
        _stands_for(c, w) and n >= m for (c, n), (w, m) in zip(runs, theirs, strict=True)
    )


@lru_cache(maxsize=1)
def _listed() -> WordList:
    swear_words = {str(entry) for entry in Profanity().CENSOR_WORDSET}
    plurals = {f"{word}{end}" for word in HOUSE_INSULTS for end in "sz"}
    return WordList(swear_words | HOUSE_INSULTS | plurals)


def _trimmed(token: str) -> str:
    """A token without the punctuation around it; inner dots, dashes and underscores
    dropped ("i.d.i.o.t", "sh-i-t"). Leading ``@`` and ``$`` stay: they are letters."""
    token = token.strip(_EDGES)
    return _SEPARATORS.sub("", token)


def _joined_runs(tokens: Sequence[str]) -> Iterator[str]:
    """What runs of single characters spell ("i d i o t"), with a two-letter piece
    ("sc u m"), and every shorter run inside (a word may sit inside a spaced line)."""
    short = [len(t) <= 2 and (len(t) == 1 or t.isalpha()) for t in tokens]
    start = 0
    while start < len(tokens):
        if not short[start]:
            start += 1
            continue
        end = start
        while end < len(tokens) and short[end]:
            end += 1
        piece = tokens[start:end]
        for i in range(len(piece)):
            joined, single = piece[i], len(piece[i]) == 1
            for token in piece[i + 1 : i + MAX_JOINED]:
                joined += token
                single = single or len(token) == 1
                if single:
                    yield joined
        start = end


def candidates(reading: str) -> set[str]:
    """Every word moderation compares with the lists, from one reading of a message."""
    text = TABLE_TERMS.sub(" ", reading.casefold())
    tokens = [t for t in (_trimmed(raw) for raw in _WORDS.findall(text)) if t]
    return set(tokens) | set(_joined_runs(tokens))


def has_offensive_word(reading: str) -> bool:
    """Whether a word of ``reading``, its disguises undone, is a listed one."""
    listed = _listed()
    return any(word in listed for word in candidates(reading))


_DISGUISED_DOT = re.compile(
    r"\s*[\[\(\{<]\s*(?:dot|\.)\s*[\]\)\}>]\s*"  # [dot] (dot) {dot} <dot> (.) [.]
    r"|\s+dot\s+"  # the word
    r"|\s+\.\s*(?=\w)"  # a dot with a space before it (a full stop has none before it)
)
_DOTTED_LETTERS = re.compile(r"\b(?:[a-z0-9]\.)+[a-z0-9]\b")
_SPACED_LETTERS = re.compile(r"\b(?:[a-z0-9] )+[a-z0-9]\b")
_TOKEN = re.compile(r"[^\s]+")


def _letters_of(token: str) -> str:
    """A token with letters in it read with its digits as letters ("c0m", "n3t")."""
    if not any(c.isalpha() for c in token) or not any(c in LEET for c in token):
        return token
    return "".join(LEET.get(c, c)[0] if c.isdigit() else c for c in token)


def link_reading(reading: str) -> str:
    """``reading`` with disguised dots, spaced letters and digit-letters undone."""
    text = reading.casefold()
    text = _DOTTED_LETTERS.sub(lambda m: m.group(0).replace(".", ""), text)
    text = _SPACED_LETTERS.sub(lambda m: m.group(0).replace(" ", ""), text)
    text = _TOKEN.sub(lambda m: _letters_of(m.group(0)), text)
    text = re.sub(r"w\s*w\s*w\s*\.", "www.", text)
    return _DISGUISED_DOT.sub(".", text)
