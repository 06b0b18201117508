"""Jellyfish .mat export: XG-style header tags, numbered rows per player, "Wins" lines."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from services.backgammon import game as games
from services.backgammon.errors import RulesError
from services.backgammon.game import Game
from services.backgammon.match import MatchRules, new_match
from services.backgammon.matfile import MatHeader, export_match, final_score
from services.backgammon.selfplay import random_match

HEADER = MatHeader("Tavla", "alice", "bob", dt.date(2026, 11, 29), stake_minor=250, currency="EUR")
MATCH3 = MatchRules(length=3)


def dropped_game() -> Game:
    rules = new_match(MATCH3).cube_rules()
    game = games.play(games.start_game(rules, 3, 1), "8/5 6/5")
    return games.drop(games.double(game))


def resigned_game() -> Game:
    rules = new_match(MATCH3).cube_rules()
    game = games.play(games.start_game(rules, 2, 5), "13/8 13/11")
    game = games.play(games.roll(game, (6, 4)), "24/14")
    return games.accept_resignation(games.offer_resignation(games.roll(game, (1, 1)), 2))


def test_header_carries_the_xg_tags() -> None:
    text = export_match(HEADER, MATCH3, [dropped_game()])
    for line in [
        '; [Site "Tavla"]',
        '; [Player 1 "alice"]',
        '; [Player 2 "bob"]',
        '; [EventDate "2026.11.29"]',
        '; [Crawford "On"]',
        '; [Jacoby "Off"]',
        '; [Beaver "Off"]',
        '; [CubeLimit "64"]',
        '; [Stake "2.50"]',
        '; [Currency "EUR"]',
        " 3 point match",
    ]:
        assert line in text.splitlines()


def test_rows_put_each_player_in_his_column_and_wins_in_the_free_cell() -> None:
    text = export_match(HEADER, MATCH3, [dropped_game(), resigned_game()])
    lines = text.splitlines()
    game1 = lines.index(" Game 1")
    assert lines[game1 + 1] == " alice : 0" + " " * 32 + "bob : 0"
    assert lines[game1 + 2] == "  1) 31: 8/5 6/5" + " " * 26 + " Doubles => 2"
    assert lines[game1 + 3] == "  2)  Drops" + " " * 31 + "Wins 1 point"
    game2 = lines.index(" Game 2")
    assert lines[game2 + 1] == " alice : 0" + " " * 32 + "bob : 1"
    assert lines[game2 + 2] == "  1)" + " " * 38 + "52: 13/11 13/8"
    assert lines[game2 + 3] == "  2) 64: 24/14*"
    # bob resigned a gammon after rolling 1-1: alice wins 2 points.
    assert lines[game2 + 4] == "      Wins 2 points"


def test_the_last_game_of_a_match_wins_the_match() -> None:
    text = export_match(HEADER, MatchRules(length=1), [dropped_game()])
    assert text.splitlines()[-1].endswith("Wins 1 point and the match")


def test_final_score_follows_the_results() -> None:
    assert final_score(MATCH3, [dropped_game(), resigned_game()]) == (2, 1)


def test_money_session_exports_as_a_zero_point_match() -> None:
    rules = MatchRules(length=0, jacoby=True, beavers=True)
    played, score = random_match(rules, random.Random(4), max_games=3)
    text = export_match(HEADER, rules, played)
    assert " 0 point match" in text and '; [Jacoby "On"]' in text
    assert final_score(rules, played) == score.score
    assert text.count("Wins") == 3


def test_unfinished_games_cannot_be_exported() -> None:
    unfinished = games.start_game(new_match(MATCH3).cube_rules(), 3, 1)
    with pytest.raises(RulesError, match="not finished"):
        export_match(HEADER, MATCH3, [unfinished])
