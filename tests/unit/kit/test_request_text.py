"""The kit's check of a request's texts: NUL characters and maximum lengths, by field."""

from __future__ import annotations

from services.kit.request_text import DEFAULT_MAX_CHARS, ID_MAX_CHARS, text_problem
from tavla.accounts.v1 import accounts_pb2
from tavla.analysis.v1 import analysis_pb2
from tavla.antiabuse.v1 import antiabuse_pb2
from tavla.antiabuse.v1 import events_pb2 as antiabuse_events_pb2
from tavla.common.v1 import money_pb2
from tavla.game.v1 import game_pb2
from tavla.wallet.v1 import wallet_pb2


def test_a_nul_anywhere_is_refused_naming_the_field() -> None:
    assert text_problem(accounts_pb2.LoginRequest(email="ann@example.com\x00", password="p")) == (
        "email contains a NUL character (\\x00), which no text may hold"
    )
    deposit = wallet_pb2.DepositRequest(amount=money_pb2.Money(minor_units=1, currency="U\x00D"))
    assert text_problem(deposit) == (
        "amount.currency contains a NUL character (\\x00), which no text may hold"
    )
    create = game_pb2.CreateGameRequest(
        players=[game_pb2.Player(account_id="a"), game_pb2.Player(account_id="b\x00")]
    )
    assert text_problem(create) == (
        "players[1].account_id contains a NUL character (\\x00), which no text may hold"
    )
    case = antiabuse_pb2.OpenCaseRequest(alert_ids=["a1", "\x00"])
    assert text_problem(case) == (
        "alert_ids[1] contains a NUL character (\\x00), which no text may hold"
    )


def test_each_text_has_its_maximum() -> None:
    at_most = [
        # Identifiers: 64 (the widest id column).
        (game_pb2.GetGameRequest(game_id="g" * ID_MAX_CHARS), None),
        (game_pb2.GetGameRequest(game_id="g" * (ID_MAX_CHARS + 1)), (
            "game_id is 65 characters long; at most 64 are accepted"
        )),
        # Any other text: the default.
        (wallet_pb2.DepositRequest(payment_method="m" * DEFAULT_MAX_CHARS), None),
        (wallet_pb2.DepositRequest(idempotency_key="k" * (DEFAULT_MAX_CHARS + 1)), (
            "idempotency_key is 201 characters long; at most 200 are accepted"
        )),
        # Those named in the table: their own.
        (accounts_pb2.RegisterRequest(email="e" * 254), None),
        (accounts_pb2.RegisterRequest(email="e" * 255), (
            "email is 255 characters long; at most 254 are accepted"
        )),
        (game_pb2.PostChatMessageRequest(text="t" * 1000), None),
        (game_pb2.PostChatMessageRequest(text="t" * 1001), (
            "text is 1001 characters long; at most 1000 are accepted"
        )),
        (antiabuse_pb2.AddCaseNoteRequest(note="n" * 2000), None),
        (analysis_pb2.AnalyseMatchRequest(mat_text="m" * 100_000), None),
    ]
    for request, expected in at_most:
        assert text_problem(request) == expected, request


def test_a_request_without_texts_passes() -> None:
    assert text_problem(wallet_pb2.GetBalancesRequest()) is None
    assert text_problem(game_pb2.GetGameRequest(game_id="g-1")) is None


def test_a_map_s_keys_and_values_are_checked() -> None:
    fine = antiabuse_events_pb2.Evidence(details={"shared_address": "198.51.100.7"})
    assert text_problem(fine) is None
    assert text_problem(antiabuse_events_pb2.Evidence(details={"k": "v\x00"})) == (
        "details['k'] contains a NUL character (\\x00), which no text may hold"
    )
    assert text_problem(antiabuse_events_pb2.Evidence(details={"k" * 201: "v"})) == (
        "details key is 201 characters long; at most 200 are accepted"
    )


def test_a_text_deep_in_repeated_messages_is_found_after_good_ones() -> None:
    players = [game_pb2.Player(account_id="a"), game_pb2.Player(account_id="b" * 65)]
    assert text_problem(game_pb2.CreateGameRequest(players=players)) == (
        "players[1].account_id is 65 characters long; at most 64 are accepted"
    )
    assert text_problem(game_pb2.CreateGameRequest(players=players[:1])) is None
