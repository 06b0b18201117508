"""`tavla bench wallet`'s window: the rate is over the whole window unless the backlog ran out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.wallet.bench import window_span

FIRST = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_a_window_closing_between_two_settlements_counts_whole() -> None:
    # Games are left: the last settlement 8.6 s in means a pause at the window's end.
    last = FIRST + timedelta(seconds=8.6)
    assert window_span(FIRST, last, 10.0, recorded=9_000, games=20_000) == 10.0


def test_a_backlog_that_ran_out_ends_the_window_at_its_last_settlement() -> None:
    last = FIRST + timedelta(seconds=4.25)
    assert window_span(FIRST, last, 10.0, recorded=20_000, games=20_000) == 4.25


def test_settlements_past_the_window_leave_it_whole() -> None:
    last = FIRST + timedelta(seconds=12)
    assert window_span(FIRST, last, 10.0, recorded=20_000, games=20_000) == 10.0


def test_nothing_settled_is_an_empty_window() -> None:
    assert window_span(FIRST, None, 10.0, recorded=0, games=20_000) == 0.0
