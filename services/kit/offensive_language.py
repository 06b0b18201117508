"""The one check of whether a text is offensive, for table chat and screen names alike.

``better-profanity``'s word list (with its leetspeak and separator variants), looked up
through :mod:`services.kit.profanity`, and the house's insults, however disguised
(:mod:`services.kit.disguises`: digits and symbols for letters, letters spaced, dotted or
stretched, stars for letters; whole words only), on every reading of the text
(:func:`services.kit.lookalikes.readings`: NFKC, Latin look-alikes from other scripts
folded, invisible characters removed, direction overrides applied as a screen shows
them). Every caller goes through :func:`offensive`, so an improvement of the reading or
of the list reaches chat moderation and screen names at once.
"""

from __future__ import annotations

from services.kit.disguises import has_offensive_word
from services.kit.lookalikes import readings
from services.kit.profanity import indexed

_PROFANITY = indexed()  # the library's default word list, loaded once, looked up fast


def offensive(text: str) -> bool:
    """Whether any reading of ``text`` contains an offensive word, however disguised."""
    for reading in readings(text):
        read = " ".join(reading.split())
        if _PROFANITY.contains_profanity(read) or has_offensive_word(read):
            return True
    return False
