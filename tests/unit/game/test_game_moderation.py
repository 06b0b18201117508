"""Table chat moderation before delivery: each refusal reason, by hand-written messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.game import moderation
from services.game.moderation import Recent, blocked_reasons, length_problem, normalised

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def reasons(text: str, recent: list[Recent] | None = None) -> tuple[str, ...]:
    return blocked_reasons(normalised(text), recent or [], NOW)


def test_ordinary_table_talk_passes() -> None:
    for text in (
        "gl hf",
        "nice roll!",
        "well played, that was a tough double",
        "I should have hit from the bar 25/20",
        "brb 1 min",
        "assassin move",  # "ass" inside a word is not offensive (library's word boundaries)
        "Scunthorpe",
    ):
        assert reasons(text) == (), text


def test_offensive_language_with_its_disguises_is_blocked() -> None:
    for text in ("you are a fucking idiot", "f u c k you", "sh1t player"):
        assert moderation.OFFENSIVE in reasons(text), text


def test_links_and_solicitation_are_blocked() -> None:
    assert reasons("see https://example.test/x") == (moderation.LINK,)
    assert reasons("visit www.chipdeals.example now") == (moderation.LINK,)
    assert reasons("best prices at chipdeals dot com") == (moderation.LINK,)
    assert reasons("selling cheap chips, message me") == (moderation.SOLICITATION,)
    assert reasons("use promo code WIN50") == (moderation.SOLICITATION,)
    assert reasons("add me on telegram") == (moderation.SOLICITATION,)
    assert reasons("earn money fast") == (moderation.SOLICITATION,)
    # both, and the refusal names both
    both = reasons("buy chips at cheapchips.gg")
    assert both == (moderation.LINK, moderation.SOLICITATION)
    text = moderation.refusal(both)
    assert "links are not allowed" in text and "[link] [solicitation]" in text


def test_a_repeat_within_a_minute_of_one_of_the_last_three_is_blocked() -> None:
    recent = [Recent("Nice roll", NOW - timedelta(seconds=30))]
    assert reasons("nice roll!!", recent) == (moderation.REPETITION,)
    assert reasons("NICE   ROLL", recent) == (moderation.REPETITION,)
    # a minute and a second later it is conversation again
    old = [Recent("Nice roll", NOW - timedelta(seconds=61))]
    assert reasons("nice roll", old) == ()
    # only the last three messages count
    pushed = [
        Recent("nice roll", NOW - timedelta(seconds=40)),
        Recent("a", NOW - timedelta(seconds=30)),
        Recent("b", NOW - timedelta(seconds=20)),
        Recent("c", NOW - timedelta(seconds=10)),
    ]
    assert reasons("nice roll", pushed) == ()
    assert reasons("!!!", [Recent("???", NOW)]) == ()  # no letters: nothing to compare


def test_length_and_blank() -> None:
    assert normalised("  a \n\t b  ") == "a b"
    assert length_problem("") == "a chat message cannot be empty"
    assert length_problem("x" * 280) is None
    assert length_problem("x" * 281) == (
        "a chat message has at most 280 characters (this one has 281)"
    )
