"""`tavla chaos`'s judgement of produced, published and settled endings, and its recovery
measure: pure functions, checked on hand-made records."""

from __future__ import annotations

from services.chaos.checks import Ending, Settled, ending_of, judge
from services.chaos.load import Sample
from services.chaos.suite import RECOVERY_WINDOW_SECONDS, recovery_seconds
from tavla.common.v1 import money_pb2
from tavla.game.v1 import events_pb2 as game_events
from tavla.game.v1 import game_pb2


def ending(game: str, event_id: str | None = None) -> Ending:
    return Ending(
        event_id=event_id or f"ev-{game}", settlement_id=f"{game}:1", game_id=game,
        disconnection=False, analysed=False, reason="borne_off",
    )  # fmt: skip


SETTLED = Settled(records=1, settled=1, real_money=True)


def test_every_game_published_and_settled_once_is_clean() -> None:
    games = [ending("g1"), ending("g2")]
    verdict = judge(games, games, {"g1:1": SETTLED, "g2:1": SETTLED})
    assert (verdict.games, verdict.settled, verdict.lost, verdict.duplicates) == (2, 2, 0, 0)
    assert verdict.clean


def test_an_ending_missing_from_the_broker_is_lost_even_when_settled() -> None:
    verdict = judge([ending("g1")], [], {"g1:1": SETTLED})
    assert verdict.lost == 1
    assert verdict.examples == ("g1:1",)


def test_a_published_ending_the_wallet_never_settled_is_lost() -> None:
    verdict = judge([ending("g1")], [ending("g1")], {})
    assert (verdict.lost, verdict.settled) == (1, 0)


def test_a_redelivered_event_is_not_a_duplicate() -> None:
    game = ending("g1")
    verdict = judge([game], [game, game], {"g1:1": SETTLED})
    assert (verdict.duplicates, verdict.redelivered) == (0, 1)


def test_a_game_ended_twice_under_two_event_ids_is_a_duplicate() -> None:
    first, second = ending("g1", "ev-a"), ending("g1", "ev-b")
    assert judge([first, second], [first, second], {"g1:1": SETTLED}).duplicates == 1
    assert judge([first], [first, second], {"g1:1": SETTLED}).duplicates == 1


def test_two_settlement_records_for_one_game_are_a_duplicate() -> None:
    game = ending("g1")
    twice = Settled(records=2, settled=2, real_money=True)
    assert judge([game], [game], {"g1:1": twice}).duplicates == 1


def test_money_moved_for_a_game_that_never_ended_is_a_duplicate() -> None:
    game = ending("g1")
    verdict = judge([game], [game], {"g1:1": SETTLED, "ghost:1": SETTLED})
    assert verdict.duplicates == 1


def test_a_rejected_settlement_is_counted_apart() -> None:
    game = ending("g1")
    verdict = judge([game], [game], {"g1:1": Settled(records=1, settled=0, real_money=True)})
    assert (verdict.settled, verdict.rejected, verdict.lost) == (0, 1, 0)


def test_only_the_games_named_are_judged() -> None:
    older, newer = ending("g1"), ending("g2")  # g2 ended after the check began
    verdict = judge([older, newer], [older], {"g1:1": SETTLED}, only={"g1:1"})
    assert (verdict.games, verdict.lost) == (1, 0)


def test_ending_of_reads_a_money_game_at_a_chaos_table_only() -> None:
    def payload(kind: int, table: str) -> bytes:
        return game_events.GameEnded(
            game_id="g1", game_number=3, table_id=table, kind=kind,
            reason=game_pb2.END_REASON_DISCONNECTION, analysed=True,
            stake=money_pb2.Money(minor_units=100, currency="USD"),
        ).SerializeToString()  # fmt: skip

    money = payload(game_pb2.PLAY_KIND_MONEY_GAME, "chaos-usd-1")
    assert ending_of("ev", money) == Ending("ev", "g1:3", "g1", True, True, "disconnection")
    assert ending_of("ev", payload(game_pb2.PLAY_KIND_MATCH, "chaos-usd-1")) is None
    assert ending_of("ev", payload(game_pb2.PLAY_KIND_MONEY_GAME, "bench-usd-1")) is None


def calls(start: float, end: float, seconds: float, ok: bool = True) -> list[Sample]:
    """A call every 0.1 s from ``start`` to ``end``."""
    return [Sample(start + i / 10, seconds, ok) for i in range(int((end - start) * 10))]


def test_recovery_is_the_start_of_the_first_quick_window_without_errors() -> None:
    samples = calls(100, 103, 0.5) + calls(103, 104, 0.01, ok=False) + calls(104, 110, 0.01)
    assert recovery_seconds(samples, 100.0, 0.02, until=110.0, within=30.0) == 4.0


def test_no_recovery_while_calls_stay_slow_or_the_window_has_not_passed() -> None:
    slow = calls(100, 140, 0.5)
    assert recovery_seconds(slow, 100.0, 0.02, until=140.0, within=30.0) is None
    quick = calls(100, 101, 0.01)
    until = 100.0 + RECOVERY_WINDOW_SECONDS - 0.5
    assert recovery_seconds(quick, 100.0, 0.02, until=until, within=30.0) is None
