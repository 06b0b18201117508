"""Table chat moderation before delivery: pure checks of one message.

The house rules: "Offensive or unsuitable language will not be tolerated ... Spam or
advertising mails are not permitted in the chat feature", and the restricted
activities forbid "repeatedly posting messages irrelevant to the discussion" and
"solicitation for any goods or services". A message is blocked, with every reason
that applies, when it:

- contains offensive language: a word of ``better-profanity``'s list (with its
  leetspeak and separator variants: a well-kept list rather than ours) or of the
  house's insults, however disguised (digits and symbols for letters, letters spaced,
  dotted or stretched, stars for letters), compared as whole words so that
  "Scunthorpe" and "class" pass: the same check as screen names',
  :func:`services.kit.offensive_language.offensive`;
- carries a link (a URL, ``www.``, or a bare domain such as ``cheapchips.gg``, also
  written "d0t c0m", "[dot] net", "(.)", "name . com" or with its letters spaced);
- solicits (selling or buying chips or accounts, "promo code", contact handles such as
  WhatsApp/Telegram/"add me on", "earn money");
- repeats one of the sender's last messages at this table within a minute (same text
  once case, spaces and punctuation are ignored).

The first three are checked on every reading of the message
(:func:`services.kit.lookalikes.readings`: NFKC, Latin look-alikes from other scripts
folded to Latin, invisible characters removed, direction overrides applied as a screen
shows them), so a word with a Cyrillic "c" (U+0441), fullwidth letters, or "kcuf" under a
right-to-left override reads as the word the list has. The message delivered keeps
its own letters, less its invisible characters (no direction tricks reach a screen).

English only is a house rule too, but a short message's language cannot be told
reliably ("gg", "nice", "ok"): it is judged after delivery, over many messages, by the
anti-abuse chat detector, never as a refusal here.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from services.kit.disguises import link_reading
from services.kit.lookalikes import readings, without_invisibles
from services.kit.offensive_language import offensive

MAX_LENGTH = 280
RATE_LIMIT = 5  # messages per player (any table) in RATE_WINDOW
RATE_WINDOW = timedelta(seconds=10)
REPEAT_WINDOW = timedelta(seconds=60)
REPEAT_LOOKBACK = 3  # the sender's last messages a new one is compared with

OFFENSIVE = "offensive_language"
LINK = "link"
SOLICITATION = "solicitation"
REPETITION = "repetition"

# Read on :func:`services.kit.disguises.link_reading`, where "[dot]", "d0t", "c o m" and
# "name . com" are already plain dots and letters.
_LINK = re.compile(
    r"(h[tx]{2}ps?\s*:\s*/\s*/|www\.|\b[a-z0-9-]{2,}\."
    r"(com|net|org|io|gg|ru|xyz|me|co|info|biz|ly|tk|bet|casino|app|link)\b)",
    re.IGNORECASE,
)
_SOLICITATION = re.compile(
    r"\b(buy|sell|selling|cheap|discount)\w*\b.{0,30}\b(chips?|coins?|accounts?|credits?|gold)\b"
    r"|\b(promo|referral|bonus|discount)\s+codes?\b"
    r"|\b(whats\s?app|telegram|skype|snapchat|onlyfans)\b"
    r"|\b(add|contact|dm|message)\s+me\s+(on|at|via)\b"
    r"|\b(earn|make)\s+\$?\d*\s*(money|cash|dollars|euros?)\b",
    re.IGNORECASE,
)
_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)


@dataclass(frozen=True)
class RateLimit:
    """At most ``count`` messages by one player in any ``window`` (counted by the caller
    over the stored messages, so every replica sees the same count)."""

    count: int
    window: timedelta
    where: str  # "at the tables", "in the lobby": what the refusal says the count covers

    def since(self, now: datetime) -> datetime:
        """The start of the window a message posted ``now`` is counted in."""
        return now - self.window

    def refusal(self, sent_in_window: int) -> str | None:
        """Why a message is refused when ``sent_in_window`` were posted in the window, or None."""
        if sent_in_window < self.count:
            return None
        return (
            f"too many chat messages {self.where}: at most {self.count} every "
            f"{int(self.window.total_seconds())} seconds; wait and try again"
        )


TABLE_RATE = RateLimit(RATE_LIMIT, RATE_WINDOW, "at the tables")


def normalised(text: str) -> str:
    """The text as posted and shown: NFKC, invisible characters (bidi controls, zero-width
    characters) removed, outer blanks removed, runs of blanks one space."""
    return " ".join(without_invisibles(unicodedata.normalize("NFKC", text)).split())


def gist(text: str) -> str:
    """What makes two messages the same message: letters and digits, case folded."""
    return _NOT_WORD.sub("", text.casefold())


@dataclass(frozen=True)
class Recent:
    """One of the sender's earlier messages at this table."""

    text: str
    posted_at: datetime


def length_problem(text: str) -> str | None:
    """Why a normalised message cannot be posted at all (not recorded), or None."""
    if not text:
        return "a chat message cannot be empty"
    if len(text) > MAX_LENGTH:
        return f"a chat message has at most {MAX_LENGTH} characters (this one has {len(text)})"
    return None


def blocked_reasons(text: str, recent: Sequence[Recent], now: datetime) -> tuple[str, ...]:
    """Every reason moderation blocks ``text`` (as the player sent it, before
    :func:`normalised`, whose direction controls it reads); empty when it may be delivered."""
    read = [" ".join(reading.split()) for reading in readings(text)]
    reasons: list[str] = []
    if offensive(text):
        reasons.append(OFFENSIVE)
    if any(_LINK.search(link_reading(reading)) for reading in read):
        reasons.append(LINK)
    if any(_SOLICITATION.search(reading) for reading in read):
        reasons.append(SOLICITATION)
    if _repeats(normalised(text), recent, now):
        reasons.append(REPETITION)
    return tuple(reasons)


def _repeats(text: str, recent: Sequence[Recent], now: datetime) -> bool:
    key = gist(text)
    if not key:
        return False
    latest = sorted(recent, key=lambda r: r.posted_at, reverse=True)[:REPEAT_LOOKBACK]
    return any(gist(r.text) == key and now - r.posted_at <= REPEAT_WINDOW for r in latest)


def refusal(reasons: Sequence[str]) -> str:
    """The message a player reads when their message is blocked."""
    why = {
        OFFENSIVE: "offensive language is not allowed (insults and swear words, however "
        "they are spelled: digits or symbols for letters, letters spaced out or stretched)",
        LINK: "links are not allowed (web addresses, however they are written: "
        "'dot com', '[.]' and spaced letters too)",
        SOLICITATION: "advertising and solicitation are not allowed",
        REPETITION: "you already sent this message",
    }
    said = "; ".join(why[r] for r in reasons)
    tags = " ".join(f"[{r}]" for r in reasons)
    return f"message not delivered: {said} {tags}"
