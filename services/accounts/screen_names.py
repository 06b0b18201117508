"""Screen names: the name other players see. Pure rules, no I/O.

A screen name is what the player types, in Unicode NFKC (fullwidth letters become plain
ones): 3 to 20 characters, each a letter (of any alphabet), an ASCII digit, ``_`` or
``-``. It is refused when it reads as offensive (the table chat's check,
:func:`services.kit.offensive_language.offensive`) or when it contains a word kept for
the site's staff (:data:`STAFF_WORDS`) in any case or look-alike spelling.

Two names are the same name when their :func:`canonical` forms are equal: the database
holds that form under a unique index, so of two concurrent registrations of "Paul" and
"P\u0430ul" (a Cyrillic a) one wins. The canonical form ignores case and folds what a reader
cannot tell apart: letters of other alphabets that Unicode's confusables data lists as
look-alikes of Latin ones (:func:`services.kit.lookalikes.latin_lookalike`), ``0``/``o``,
``1``/``l``/``i`` (a capital I is a small l in many fonts, and case is ignored), ``rn``/``m``,
``vv``/``w``, and ``-``/``_``.
"""

from __future__ import annotations

import re
import unicodedata

from services.kit.errors import InvalidArgument
from services.kit.lookalikes import latin_lookalike
from services.kit.offensive_language import offensive

MIN_LENGTH, MAX_LENGTH = 3, 20
# Words only the site's own people may carry in a name; matched inside a name, after
# folding, with separators ignored ("Tavla_Support", "ADM1N", "s-t-a-f-f").
STAFF_WORDS = (
    "admin", "support", "moderator", "tavla", "staff", "official", "compliance",
    "helpdesk", "croupier",
)
_SEPARATORS = "_-"
# Sequences a reader takes for one another, after case folding and look-alike folding.
_SAME_LOOKING = (("rn", "m"), ("vv", "w"), ("0", "o"), ("1", "l"), ("i", "l"), ("|", "l"),
                 ("-", "_"))
_CAMEL_HUMP = re.compile(r"(?<=[a-z])(?=[A-Z])")
ALLOWED = f"{MIN_LENGTH} to {MAX_LENGTH} characters: letters, digits, '_' or '-'"


def _allowed_character(char: str) -> bool:
    return char in _SEPARATORS or ("0" <= char <= "9") or unicodedata.category(char)[0] == "L"


def _latin(text: str) -> str:
    return "".join(latin_lookalike(char) for char in text)


def canonical(name: str) -> str:
    """The form two names share when a reader could take one for the other."""
    # Folded before and after case folding: a capital Greek Tau is a T, its small form
    # is not a t.
    folded = _latin(_latin(unicodedata.normalize("NFKC", name)).casefold()).casefold()
    for seen, same in _SAME_LOOKING:
        folded = folded.replace(seen, same)
    return folded


def check_screen_name(raw: str) -> str:
    """The screen name as stored (NFKC, outer blanks removed), or InvalidArgument saying
    what to change."""
    name = unicodedata.normalize("NFKC", raw).strip()
    if not MIN_LENGTH <= len(name) <= MAX_LENGTH:
        raise InvalidArgument(
            f"a screen name (display name) has {ALLOWED} (this one has {len(name)} characters)"
        )
    wrong = sorted({char for char in name if not _allowed_character(char)})
    if wrong:
        shown = ", ".join(repr(char) for char in wrong)
        raise InvalidArgument(f"a screen name (display name) has {ALLOWED}; not {shown}")
    staff = _staff_word_in(name)
    if staff is not None:
        raise InvalidArgument(
            f"screen names containing {staff!r} (in any spelling) are kept for the site's "
            "staff: choose another"
        )
    if _reads_as_offensive(name):
        raise InvalidArgument("this screen name reads as offensive language: choose another")
    return name


def _staff_word_in(name: str) -> str | None:
    squeezed = canonical(name).replace("_", "")
    for word in STAFF_WORDS:
        if canonical(word) in squeezed:
            return word
    return None


def _reads_as_offensive(name: str) -> bool:
    """The chat's check on the name as written, with its separators and camel-case humps
    as spaces ("fuck_you", "BigFuck"), and with its separators left out ("f-u-c-k")."""
    spaced = _CAMEL_HUMP.sub(" ", name)
    for separator in _SEPARATORS:
        spaced = spaced.replace(separator, " ")
    joined = "".join(char for char in name if char not in _SEPARATORS)
    return any(offensive(text) for text in (name, spaced, joined))
