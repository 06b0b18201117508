"""The pure chat detectors: harassment, spam, English only, consulting.

Each scenario is built by hand with its expected verdict counted by hand.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from services.antiabuse.domain import chat_abuse
from services.antiabuse.domain.chat_abuse import ChatLine, assess_abuse, assess_consulting
from services.antiabuse.domain.findings import Detector, Severity

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def line(
    n: int,
    text: str,
    *,
    reasons: tuple[str, ...] = (),
    game: str = "g1",
    to: str = "bob",
    muted: bool = False,
    minutes: float | None = None,
) -> ChatLine:
    return ChatLine(
        message_id=f"m{n}",
        game_id=game,
        account_id="alice",
        recipient=to,
        text=text,
        blocked_reasons=reasons,
        muted_by_recipient=muted,
        english=chat_abuse.english(text),
        at=T0 + timedelta(minutes=n if minutes is None else minutes),
    )


ORDINARY = [
    "good luck and have fun",
    "nice roll",
    "what a lucky roll you got there",
    "gg wp",
    "well played, that was a tough double",
    "thanks, you too",
]


def test_ordinary_chat_raises_nothing() -> None:
    lines = [line(n, text) for n, text in enumerate(ORDINARY * 3)]
    assert assess_abuse(lines) is None
    assert assess_consulting(lines) is None


def test_offensive_messages_blocked_three_times_are_harassment_six_high() -> None:
    two = [line(n, "censored", reasons=("offensive_language",)) for n in range(2)]
    assert assess_abuse(two) is None
    three = [*two, line(2, "censored", reasons=("offensive_language",))]
    finding = assess_abuse(three)
    assert finding is not None
    assert finding.detector == Detector.CHAT_ABUSE and finding.subjects == ("alice",)
    assert finding.severity == Severity.MEDIUM and finding.score == 3.0
    (evidence,) = finding.evidence
    assert evidence.kind == "offensive_language"
    assert evidence.details["message_ids"] == "m0,m1,m2" and evidence.game_ids == ("g1",)
    six = [line(n, "censored", reasons=("offensive_language",)) for n in range(6)]
    high = assess_abuse(six)
    assert high is not None and high.severity == Severity.HIGH


def test_muted_by_three_opponents_is_a_low_harassment_signal() -> None:
    by_two = [line(n, "you are so slow", muted=True, to=f"p{n % 2}") for n in range(4)]
    assert assess_abuse(by_two) is None
    by_three = [line(n, "you are so slow", muted=True, to=f"p{n}") for n in range(3)]
    finding = assess_abuse(by_three)
    assert finding is not None and finding.severity == Severity.LOW
    assert [e.kind for e in finding.evidence] == ["muted_by_opponents"]


def test_spam_blocked_copied_across_tables_and_bursts() -> None:
    blocked = [
        line(0, "see x", reasons=("link",)),
        line(1, "buy chips", reasons=("solicitation",)),
        line(2, "buy chips here", reasons=("solicitation", "repetition")),
    ]
    finding = assess_abuse(blocked)
    assert finding is not None and finding.severity == Severity.MEDIUM
    assert [e.kind for e in finding.evidence] == ["spam_blocked"]
    # Refused only as repeats, a question asked again three times is no spam.
    asked = "what should I play at the other table?"
    assert assess_abuse([line(n, asked, reasons=("repetition",)) for n in range(3)]) is None
    # The same delivered text 5 times over 3 tables: an advertiser moving on.
    ad = "Join the best backgammon club in town tonight"
    copies = [line(n, ad, game=f"g{n % 3}") for n in range(5)]
    copied = assess_abuse(copies)
    assert copied is not None and copied.severity == Severity.MEDIUM
    assert copied.evidence[0].kind == "spam_copies" and copied.score == 5.0
    assert set(copied.evidence[0].game_ids) == {"g0", "g1", "g2"}
    # 5 copies at 2 tables only is a player repeating themselves: nothing.
    assert assess_abuse([line(n, ad, game=f"g{n % 2}") for n in range(5)]) is None
    # Table talk is the same at every table: a dozen of each over six games is no spam.
    talk = ["gg", "gl", "good luck, have fun", "nice roll", "thanks, you too", "well played"]
    honest = [line(n, talk[n % 6], game=f"g{n // 12}") for n in range(72)]
    assert assess_abuse(honest) is None
    # 40 distinct messages within 5 minutes: a burst (7.5 s apart: 39 x 7.5 s = 292.5 s).
    burst = [line(n, f"message {n} here", minutes=n * 0.125) for n in range(40)]
    found = assess_abuse(burst)
    assert found is not None and found.severity == Severity.LOW
    assert [e.kind for e in found.evidence] == ["spam_rate"]
    # 40 over more than 5 minutes (8 s apart: 312 s): none.
    slow = [line(n, f"message {n} here", minutes=n * 8 / 60) for n in range(40)]
    assert assess_abuse(slow) is None


def test_chat_in_another_language_is_flagged_low_once_it_is_most_of_the_chat() -> None:
    italian = [
        "ciao come stai, bella partita oggi",
        "che fortuna hai avuto con quel doppio",
        "adesso gioco molto meglio di prima",
        "non ci posso credere, ancora un sei",
        "grazie mille per la bella partita",
    ]
    four = [line(n, text) for n, text in enumerate(italian[:4])]
    assert all(x.english is False for x in four)
    assert assess_abuse(four) is None  # four is below five
    five = [line(n, text) for n, text in enumerate(italian)]
    finding = assess_abuse(five)
    assert finding is not None and finding.severity == Severity.LOW
    assert finding.evidence[0].kind == "not_english"
    # Five foreign among eleven judged English ones: less than half, nothing.
    english = [line(10 + n, t) for n, t in enumerate(ORDINARY * 2) if chat_abuse.english(t)]
    assert len(english) >= 6
    assert assess_abuse([*five, *english]) is None
    assert chat_abuse.english("gg wp") is None  # too short to tell


def test_consulting_needs_two_messages_about_another_game() -> None:
    assert chat_abuse.consulting_cues("what should I play at the other table?") == (
        "another_game",)
    assert chat_abuse.consulting_cues("at my other table I rolled 6-5") == ("another_game",)
    assert chat_abuse.consulting_cues("on another game: play 13/7 8/7 there") == (
        "another_game",)
    assert chat_abuse.consulting_cues("other table: double?") == ("another_game",)
    # A mention of another game without its content is table talk.
    for talk in ("how is it going at the other table?", "next game?", "gg, another game?",
                 "the other table was faster lol", "another game tomorrow?",
                 "what a roll", "my second game today"):
        assert chat_abuse.consulting_cues(talk) == (), talk
    assert chat_abuse.consulting_cues("position 4HPwATDgc/ABMA look") == ("gnubg_id",)
    assert chat_abuse.consulting_cues("match id cAkAAAAAAAAA") == ("gnubg_id",)
    assert chat_abuse.consulting_cues("ABCDEFGHIJKLMN abcdefghijklmn") == ()  # no mixed id
    assert chat_abuse.consulting_cues("HelloEverybody") == ()  # CamelCase, not an id
    assert chat_abuse.consulting_cues("nice game, see you at the next one") == ()
    one = [line(0, "your opponent at the other table rolled 5-5")]
    assert assess_consulting(one) is None
    two = [*one, line(1, "paste me 4HPwATDgc/ABMA")]
    finding = assess_consulting(two)
    assert finding is not None and finding.detector == Detector.CONSULTING
    assert finding.severity == Severity.MEDIUM and finding.score == 2.0
    assert "4HPwATDgc/ABMA" in finding.evidence[0].details["excerpts"]
    advised = assess_consulting([*two, line(2, "play 13/7 8/7 there")])
    assert advised is not None and advised.severity == Severity.HIGH
    assert [e.kind for e in advised.evidence] == ["chat_about_another_game", "move_advice"]


def lobby(n: int, text: str, room: str, *, reasons: tuple[str, ...] = ()) -> ChatLine:
    """A lobby message: a room, no game and no recipient (as the consumer keeps it)."""
    return replace(line(n, text, reasons=reasons, game="", to=""), room=room)


def test_lobby_messages_count_with_table_messages_and_name_their_room() -> None:
    offensive = ("offensive_language",)
    lines = [
        line(0, "censored", reasons=offensive, game="g1"),
        lobby(1, "censored", "USD", reasons=offensive),
        lobby(2, "censored", "PLAY", reasons=offensive),
    ]
    finding = assess_abuse(lines)
    assert finding is not None and finding.severity is Severity.MEDIUM
    (evidence,) = finding.evidence
    assert evidence.kind == "offensive_language"
    assert evidence.game_ids == ("g1",)  # no empty game id for the lobby's two
    assert evidence.details["lobby_rooms"] == "USD,PLAY"
    assert evidence.details["message_ids"] == "m0,m1,m2"
    # Table messages alone name no room.
    table_only = assess_abuse([line(n, "censored", reasons=offensive) for n in range(3)])
    assert table_only is not None and "lobby_rooms" not in table_only.evidence[0].details


def test_an_advert_in_two_lobby_rooms_and_at_a_table_is_copied_across_three_places() -> None:
    ad = "best backgammon coaching around, ask me how"
    places = [lobby(0, ad, "USD"), lobby(1, ad, "EUR"), lobby(2, ad, "USD"),
              line(3, ad, game="g1"), lobby(4, ad, "EUR")]  # fmt: skip
    copied = assess_abuse(places)
    assert copied is not None and copied.evidence[0].kind == "spam_copies"
    assert copied.evidence[0].details["lobby_rooms"] == "USD,EUR"
    # The same five in one room are a player repeating themselves there: nothing.
    assert assess_abuse([lobby(n, ad, "USD") for n in range(5)]) is None


def test_two_different_adverts_one_soliciting_are_spam_a_retry_or_a_link_is_not() -> None:
    promo = line(0, "promo code WIN50 at bestbg.io", reasons=("link", "solicitation"))
    site = line(1, "visit my-site d0t c0m for free chips", reasons=("link",), game="g2")
    found = assess_abuse([promo, site])
    assert found is not None and found.severity == Severity.MEDIUM
    assert [e.kind for e in found.evidence] == ["spam_adverts"] and found.score == 2.0
    # One advert refused and sent again (case and punctuation aside): one text, so not
    # the campaign of two (only the LOW single advert: a link with a pitch).
    retry = line(1, "Promo code: WIN50 at bestbg.io!", reasons=("link", "solicitation"))
    once = assess_abuse([promo, retry])
    assert once is not None and once.severity == Severity.LOW
    assert [e.kind for e in once.evidence] == ["spam_advert"]
    # A link refused, then reworded past the filter and refused again: no solicitation.
    link = line(0, "rules are on bkgm.com", reasons=("link",))
    reworded = line(1, "rules are on bkgm dot com", reasons=("link",))
    assert assess_abuse([link, reworded]) is None
    # Two different messages refused only as repeats: table talk typed twice, not adverts.
    repeats = [line(0, "gg", reasons=("repetition",)), line(1, "nice", reasons=("repetition",))]
    assert assess_abuse(repeats) is None
    # Three blocked of any kind stay the spam_blocked part (no second part for the same lines).
    three = assess_abuse([promo, site, link])
    assert three is not None and [e.kind for e in three.evidence] == ["spam_blocked"]


def test_one_advert_beyond_doubt_is_low_spam_a_plain_link_or_a_retry_is_not() -> None:
    # Each line below is how the game's moderation refuses it (its reasons, by hand).
    pitch = line(0, "buy cheap chips at www.chipz.com", reasons=("link", "solicitation"))
    disguised = line(0, "visit my-site d0t c0m for free chips", reasons=("link",))
    messenger = line(0, "add me on telegram for a bonus code", reasons=("solicitation",))
    expected = {pitch: "link_and_solicitation", disguised: "disguised_link",
                messenger: "off_platform_contact"}  # fmt: skip
    for advert, why in expected.items():
        assert chat_abuse.unambiguous_advert(advert) == why
        found = assess_abuse([advert])
        assert found is not None and found.severity == Severity.LOW and found.score == 1.0
        assert [e.kind for e in found.evidence] == ["spam_advert"]
    # A link shared plainly is a slip, not an advert; retyped past the filter after its
    # refusal it is a retry of the same link (its link reading is the refused text).
    plain = line(0, "rules are on bkgm.com", reasons=("link",))
    retyped = line(1, "rules are on bkgm dot com", reasons=("link",))
    assert assess_abuse([plain]) is None and assess_abuse([plain, retyped]) is None
    # Selling without a way to reach the seller off the platform: one line, nothing.
    assert assess_abuse([line(0, "selling cheap chips", reasons=("solicitation",))]) is None
    # Two of them stay the MEDIUM adverts part (one evidence item, not two).
    two = assess_abuse([pitch, replace(messenger, message_id="m1", at=T0 + timedelta(minutes=1))])
    assert two is not None and two.severity == Severity.MEDIUM
    assert [e.kind for e in two.evidence] == ["spam_adverts"]
