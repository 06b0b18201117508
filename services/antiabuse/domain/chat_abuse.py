"""Table and lobby chat after delivery: harassment, spam, the English-only house rule,
consulting.

Pure. Input: one sender's chat lines over ``window`` (from the game service's
``ChatMessagePosted`` and ``LobbyMessagePosted``, which carry what moderation blocked
before delivery and why), the table's and the lobby's together: a sender's lobby
messages count as their table messages do, their evidence naming the lobby room
(``lobby_rooms``) where a table message names its game. The game service refuses single
messages; this module judges the pattern.

**Chat abuse** (detector ``chat_abuse``), one finding per sender, its severity the
highest of its parts:

- *harassment / offensive language*: messages blocked as offensive (MEDIUM at 3,
  HIGH at 6); being muted by several different opponents (LOW at 3): the
  borderline signal, messages that passed moderation but that opponents chose not
  to read;
- *spam*: messages blocked for links or solicitation (MEDIUM at 3, HIGH at 6); a
  message refused only as a repeat is not counted: a player who asks again what the
  opponent did not answer is refused by moderation, which is enough (the tuning
  population's consultant, asking the same question twice in a game, reached 3 such
  refusals and a MEDIUM alert);
  *adverts*: 2 different texts blocked for links or solicitation, one of them
  for solicitation (MEDIUM). Each is refused already; two different adverts are a
  campaign where one is a slip: a spammer who is refused posts the next line of the
  script (the held-out population's spammers with 2 blocked adverts, on fresh seeds,
  stayed under the 3 of any kind). A retry of one message is one text (compared as the
  copies below, letters only), a link pasted and then reworded past moderation
  ("bkgm.com", then "bkgm dot com") carries no solicitation, and repetition alone never
  counts here: an honest player who shares a link or repeats "gg" is not an advertiser;
  *one unambiguous advert* (LOW): a single message moderation refused for a link or
  solicitation whose content leaves no doubt (:func:`unambiguous_advert`): a link with
  a sales pitch (refused for both), a link written in disguise from the start ("my-site
  d0t c0m", "chipz [dot] net": read by the moderation's link reading, with no plain link
  in the text and no plain version of it refused before), or a solicitation naming a
  channel off the platform (Telegram, WhatsApp, "dm me on"). Why one is enough: an honest
  player who shares a site writes it plainly, and retypes it when refused ("bkgm.com",
  then "bkgm dot com", a retry of one link, not counted); disguising a link before
  moderation has ever refused it is evading the filter, and asking a stranger to move to
  a messenger is how off-platform sales and scams start. A spammer who posts one line
  and leaves (the held-out population's one-line spammers, 1 in 18 on fresh seeds) was
  invisible to every count above. LOW, since the message was refused (nothing reached
  the opponent) and one line is the least evidence; more lines reach MEDIUM above;
  the same text delivered at several tables (MEDIUM: 5 copies over 3 games,
  a lobby room counting as a table, the pattern of an advertiser moving from table to
  table); a burst (LOW: 40
  messages in 5 minutes, near the game's rate limit for minutes on end);
- *not English*: the house rules say "Chatting at the tables and in the lobby is
  only permitted in English" (``../shared/reference/``, house rules), so it is
  checked, with ``langdetect`` (seeded, so a message is judged the same way every
  time), and only on messages long enough to tell (3 words, 15 letters):
  LOW at 5 such messages that are at least half of the sender's judged ones. A
  house rule, not a restricted activity: it never goes above LOW.

**Consulting** (detector ``consulting``): "You may not consult with or help other
players while they are playing, by using the chat". Kept simple: a message
*about another running game* is one that mentions another table or game ("at the
other table", "in the other game", "my other account") *and* carries that game's
content (a question about what to play, dice such as "6-5", a move such as "13/7", a
cube action asked about), or carries a GNU Backgammon Position ID or Match ID (14 or
12 base64 characters of mixed case with a digit), which a player pastes to share a
position. A mention alone is table talk: "next game?", "gg, another game?", "see you
at the other table", "I was at the other table all night" are what honest players
say (the held-out population's table talk, ``evaluation/heldout.py``, flagged honest
players at 2 such lines when a mention alone counted). MEDIUM at 2 such
messages, HIGH when there are 2 and at least one of the sender's messages in the
window also gives move advice ("play 13/7 8/7"). It needs a person to read the
excerpts: the detector cannot know whether the game talked about is running.
Consulting "by any other way" (linked accounts at different tables at once, one
playing better while the other idles) is :mod:`.consulting_play`, same detector name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from langdetect import DetectorFactory, LangDetectException, detect_langs

from services.antiabuse.domain.findings import Detector, Evidence, Finding, Severity
from services.kit.disguises import link_reading

OFFENSIVE = "offensive_language"
SOLICITATION = "solicitation"
LINK = "link"
ADVERT_REASONS = frozenset({LINK, SOLICITATION})
EXCERPT = 80
SHOWN = 10  # message ids and excerpts per evidence item

DetectorFactory.seed = 0  # langdetect is random unless seeded


@dataclass(frozen=True)
class ChatLine:
    """One message as the detector keeps it: at a table (``game_id``, ``recipient`` the
    opponent) or in a lobby room (``room``; no game and no recipient)."""

    message_id: str
    game_id: str
    account_id: str
    recipient: str
    text: str
    blocked_reasons: tuple[str, ...]
    muted_by_recipient: bool
    english: bool | None  # None: too short to tell
    at: datetime
    room: str = ""

    @property
    def place(self) -> str:
        """Where it was said: the game, or the lobby room."""
        return self.game_id or f"lobby:{self.room}"


@dataclass(frozen=True)
class ChatPolicy:
    window: timedelta = timedelta(hours=24)
    offensive_medium: int = 3
    offensive_high: int = 6
    spam_blocked_medium: int = 3
    spam_blocked_high: int = 6
    adverts: int = 2  # different texts blocked for links or solicitation (one soliciting)
    copies: int = 5
    copy_games: int = 3
    # A copy is spam only when it says something: "gg", "gl" and "good luck, have fun" are
    # typed the same at every table by honest players (an advertiser's line is longer).
    copy_min_words: int = 5
    burst: int = 40
    burst_window: timedelta = timedelta(minutes=5)
    muted_by: int = 3
    foreign: int = 5
    foreign_share: float = 0.5
    consulting: int = 2


DEFAULT_POLICY = ChatPolicy()

_WORDS = re.compile(r"[^\W\d_]+", re.UNICODE)
# A link as typed: a scheme, "www." or a dot between a name and a top-level domain's letters.
_PLAIN_LINK = re.compile(r"://|\bwww\.|[^\W_]\.[^\W\d_]{2,}", re.IGNORECASE)
# A channel off the platform: a messenger named, or a request to be contacted.
_CONTACT = re.compile(
    r"\b(whats\s?app|telegram|skype|snapchat|discord|wechat|viber|kik)\b"
    r"|\b(add|contact|dm|message|text)\s+me\b",
    re.IGNORECASE,
)
_OTHER_GAME = re.compile(
    r"\b(other|another|next|second)\s+(table|game|match|board)\b"
    r"|\b(at|on)\s+table\s+\S*\d"
    r"|\bmy\s+(other|second)\s+(account|seat)\b",
    re.IGNORECASE,
)
# What makes a mention of another game consulting rather than table talk: the game's
# content. A question about what to play, dice, a move, a cube action asked about.
_GAME_CONTENT = re.compile(
    r"\b(what|which)\s+(should|do|would|to)\s+(i|you|we)?\s*(play|move|do)\b"
    r"|\b(rolled|roll|got)\s+(a\s+)?[1-6]\s*-\s*[1-6]\b|\b[1-6]\s*-\s*[1-6]\b"
    r"|\b(\d{1,2}|bar)/(\d{1,2}|off)\b"
    r"|\b(double|take|pass|drop|redouble)\s*(it|or\s+\w+)?\s*\?",
    re.IGNORECASE,
)
_GNUBG_ID = re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{14}|[A-Za-z0-9+/]{12})(?![A-Za-z0-9+/])")
_MOVE_ADVICE = re.compile(r"\b(play|move|run|hit)\b[^.?!]{0,12}\b\d{1,2}/\d{1,2}\b", re.IGNORECASE)


def english(text: str) -> bool | None:
    """Whether a message is English; None when it is too short to tell."""
    if len(text.split()) < 3 or sum(len(w) for w in _WORDS.findall(text)) < 15:
        return None
    try:
        guesses = detect_langs(text)
    except LangDetectException:
        return None
    english_share = sum(g.prob for g in guesses if g.lang == "en")
    if english_share >= 0.2:
        return True
    return False if guesses and guesses[0].prob >= 0.8 else None


def _looks_like_id(token: str) -> bool:
    """Base64 of mixed case with a digit or + or /, or at least 3 capitals (a Match ID
    such as ``cAkAAAAAAAAA`` may have no digit): not a word or a CamelCase pair."""
    upper = sum(c.isupper() for c in token)
    if not upper or not any(c.islower() for c in token):
        return False
    return upper >= 3 or any(c.isdigit() or c in "+/" for c in token)


def consulting_cues(text: str) -> tuple[str, ...]:
    """Why a message reads as being about another game (empty: it does not)."""
    cues: list[str] = []
    if _OTHER_GAME.search(text) and _GAME_CONTENT.search(text):
        cues.append("another_game")
    if any(_looks_like_id(m.group(1)) for m in _GNUBG_ID.finditer(text)):
        cues.append("gnubg_id")
    return tuple(cues)


def _excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def _evidence(kind: str, description: str, lines: Sequence[ChatLine]) -> Evidence:
    games = tuple(dict.fromkeys(line.game_id for line in lines if line.game_id))
    rooms = tuple(dict.fromkeys(line.room for line in lines if line.room))
    shown = lines[-SHOWN:]
    details = {
        "messages": str(len(lines)),
        "message_ids": ",".join(line.message_id for line in shown),
        "excerpts": " | ".join(_excerpt(line.text) for line in shown),
    }
    if rooms:  # lobby messages: the rooms they were said in, as a game's are its id
        details["lobby_rooms"] = ",".join(rooms)
    return Evidence(kind=kind, description=description, game_ids=games, details=details)


def _tiered(count: int, medium: int, high: int) -> Severity | None:
    if count >= high:
        return Severity.HIGH
    return Severity.MEDIUM if count >= medium else None


def _copies(lines: Sequence[ChatLine], policy: ChatPolicy) -> list[ChatLine]:
    """Delivered messages of ``copy_min_words`` words or more whose text the sender posted
    in ``copy_games`` places or more (tables, and lobby rooms each as a place)."""
    by_text: dict[str, list[ChatLine]] = {}
    for line in lines:
        words = _WORDS.findall(line.text.casefold())
        if not line.blocked_reasons and len(words) >= policy.copy_min_words:
            by_text.setdefault("".join(words), []).append(line)
    copied: list[ChatLine] = []
    for same in by_text.values():
        if len(same) >= policy.copies and len({s.place for s in same}) >= policy.copy_games:
            copied.extend(same)
    return copied


def _adverts(lines: Sequence[ChatLine], policy: ChatPolicy) -> list[ChatLine]:
    """The messages blocked for links or solicitation when they are ``adverts`` different
    texts or more, at least one of them soliciting (else none)."""
    blocked = [line for line in lines if ADVERT_REASONS.intersection(line.blocked_reasons)]
    texts = {"".join(_WORDS.findall(line.text.casefold())) for line in blocked}
    soliciting = any(SOLICITATION in line.blocked_reasons for line in blocked)
    return blocked if soliciting and len(texts) >= policy.adverts else []


def unambiguous_advert(line: ChatLine, earlier: Sequence[ChatLine] = ()) -> str | None:
    """Why one refused message is an advert beyond doubt (``link_and_solicitation``,
    ``disguised_link``, ``off_platform_contact``), or None. ``earlier``: the sender's
    messages before it (a link refused plainly and retyped in disguise is a retry)."""
    reasons = set(line.blocked_reasons)
    if LINK in reasons and SOLICITATION in reasons:
        return "link_and_solicitation"
    if LINK in reasons and not _PLAIN_LINK.search(line.text):
        read = _letters(link_reading(line.text))
        retried = any(
            LINK in e.blocked_reasons and _letters(link_reading(e.text)) == read for e in earlier
        )
        if _PLAIN_LINK.search(link_reading(line.text)) and not retried:
            return "disguised_link"
    if SOLICITATION in reasons and _CONTACT.search(line.text):
        return "off_platform_contact"
    return None


def _letters(text: str) -> str:
    return "".join(_WORDS.findall(text.casefold()))


def _single_advert(lines: Sequence[ChatLine]) -> list[ChatLine]:
    """The sender's unambiguous adverts (:func:`unambiguous_advert`), in time order."""
    ordered = sorted(lines, key=lambda line: line.at)
    return [
        line for n, line in enumerate(ordered) if unambiguous_advert(line, ordered[:n])
    ]


def _burst(lines: Sequence[ChatLine], policy: ChatPolicy) -> list[ChatLine]:
    """The first run of ``burst`` messages within ``burst_window``, if any."""
    ordered = sorted(lines, key=lambda line: line.at)
    for start in range(len(ordered) - policy.burst + 1):
        run = ordered[start : start + policy.burst]
        if run[-1].at - run[0].at <= policy.burst_window:
            return run
    return []


Part = tuple[Severity, Evidence, Sequence[ChatLine]]


def _part(severity: Severity, kind: str, description: str, lines: Sequence[ChatLine]) -> Part:
    return severity, _evidence(kind, description, lines), lines


def _parts(lines: Sequence[ChatLine], policy: ChatPolicy) -> Iterable[Part]:
    offensive = [line for line in lines if OFFENSIVE in line.blocked_reasons]
    severity = _tiered(len(offensive), policy.offensive_medium, policy.offensive_high)
    if severity is not None:
        yield _part(severity, "offensive_language", "messages blocked as offensive", offensive)
    muted = [line for line in lines if line.muted_by_recipient]
    if len({line.recipient for line in muted}) >= policy.muted_by:
        yield _part(Severity.LOW, "muted_by_opponents", "opponents muted the sender", muted)
    spam = [line for line in lines if ADVERT_REASONS.intersection(line.blocked_reasons)]
    severity = _tiered(len(spam), policy.spam_blocked_medium, policy.spam_blocked_high)
    if severity is not None:
        yield _part(severity, "spam_blocked", "links or solicitation", spam)
    else:
        adverts = _adverts(lines, policy)
        if adverts:
            yield _part(Severity.MEDIUM, "spam_adverts", "different adverts blocked", adverts)
        elif single := _single_advert(lines):
            yield _part(Severity.LOW, "spam_advert", "an advert beyond doubt, blocked", single)
    copies = _copies(lines, policy)
    if copies:
        yield _part(Severity.MEDIUM, "spam_copies", "the same text at several tables", copies)
    burst = _burst(lines, policy)
    if burst:
        yield _part(Severity.LOW, "spam_rate", f"{policy.burst} messages in minutes", burst)
    judged = [line for line in lines if line.english is not None]
    foreign = [line for line in judged if line.english is False]
    if len(foreign) >= policy.foreign and len(foreign) >= policy.foreign_share * len(judged):
        yield _part(Severity.LOW, "not_english", "chat is English only (house rules)", foreign)


def assess_abuse(lines: Sequence[ChatLine], policy: ChatPolicy = DEFAULT_POLICY) -> Finding | None:
    """One sender's chat abuse over the window, or None."""
    parts = list(_parts(lines, policy))
    if not parts:
        return None
    senders = sorted({line.account_id for line in lines})
    offending = {line.message_id for _, _, behind in parts for line in behind}
    return Finding(
        detector=Detector.CHAT_ABUSE,
        subjects=tuple(senders),
        severity=max(severity for severity, _, _ in parts),
        score=float(len(offending)),
        score_meaning="messages behind the finding (blocked, copied, muted or not English)",
        evidence=tuple(evidence for _, evidence, _ in parts),
    )


def assess_consulting(
    lines: Sequence[ChatLine], policy: ChatPolicy = DEFAULT_POLICY
) -> Finding | None:
    """One sender's messages about another running game, or None."""
    about = [line for line in lines if consulting_cues(line.text)]
    if len(about) < policy.consulting:
        return None
    advice = [line for line in lines if _MOVE_ADVICE.search(line.text)]
    evidence = [_evidence("chat_about_another_game", "messages about another game", about)]
    if advice:
        evidence.append(_evidence("move_advice", "messages that give a move", advice))
    return Finding(
        detector=Detector.CONSULTING,
        subjects=tuple(sorted({line.account_id for line in lines})),
        severity=Severity.HIGH if advice else Severity.MEDIUM,
        score=float(len(about)),
        score_meaning="messages that mention another game or table, or carry a position/match id",
        evidence=tuple(evidence),
    )
