"""The Jellyfish .mat reader: layout as GNU Backgammon writes it, and errors naming the line."""

from __future__ import annotations

import pickle

import pytest

from services.analysis.domain.matread import Kind, MatFileError, parse

# gnubg 1.07's export layout (right column at 33), with XG-style tags as the game writes.
GNUBG_STYLE = """; [Site "Tavla"]
; [Crawford "Off"]
; [Jacoby "On"]
; [CubeLimit "8"]

 3 point match

 Game 1
 alice : 0                      bob : 0
  1)                             21: 24/22 24/23
  2) 52: 13/8 24/22              63: 6/3* 22/16
  3)  Doubles => 2                Takes
  4) 65: 25/20 4/0                55:
  5)  Doubles => 4                Drops
      Wins 2 points

 Game 2
 alice : 2                      bob : 0
  1) 31: 8/5 6/5                  Beavers => 4
                                  Wins 1 point and the match
"""


def test_reads_names_rules_scores_and_every_action_with_its_player_and_line() -> None:
    record = parse(GNUBG_STYLE)
    assert record.names == ("alice", "bob")
    assert (record.length, record.crawford, record.jacoby, record.cube_cap) == (3, False, True, 8)
    first, second = record.games
    assert (first.number, first.score, second.score) == (1, (0, 0), (2, 0))
    summary = [(a.line, a.player, a.kind, a.dice, a.text, a.value) for a in first.actions]
    assert summary == [
        (10, 1, Kind.MOVE, (2, 1), "24/22 24/23", 0),
        (11, 0, Kind.MOVE, (5, 2), "13/8 24/22", 0),
        (11, 1, Kind.MOVE, (6, 3), "6/3* 22/16", 0),
        (12, 0, Kind.DOUBLE, (0, 0), "", 2),
        (12, 1, Kind.TAKE, (0, 0), "", 0),
        (13, 0, Kind.MOVE, (6, 5), "25/20 4/0", 0),
        (13, 1, Kind.MOVE, (5, 5), "", 0),  # no legal play
        (14, 0, Kind.DOUBLE, (0, 0), "", 4),
        (14, 1, Kind.DROP, (0, 0), "", 0),
        (15, 0, Kind.WIN, (0, 0), "", 2),
    ]
    assert [(a.player, a.kind, a.value) for a in second.actions] == [
        (0, Kind.MOVE, 0),
        (1, Kind.BEAVER, 4),
        (1, Kind.WIN, 1),
    ]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("hello\n", 1, "expected 'N point match'"),
        (" 3 point match\n Game 1\n a : 0   b : 0\n  1) 31: 8/5 6/5 banana\n", 0, ""),
        (" 3 point match\n Game 1\n a : 0   b : 0\n  1) 31 8/5 6/5\n", 4, "not a move"),
        (" 3 point match\n Game 1\n a : 0   b : 0\n  1) junk 31: 8/5 6/5\n", 4, "unexpected"),
        (" 3 point match\n Game 1\n a : 0   b : 0\n  1)  Takes please\n", 4, "unexpected"),
        ('; [CubeLimit "lots"]\n 3 point match\n', 1, "CubeLimit"),
        (" Game 1\n", 1, "before the 'N point match'"),
        ("", 0, "no 'N point match' line"),
        (" 5 point match\n", 0, "no games"),
    ],
)
def test_a_bad_file_names_the_line(text: str, line: int, words: str) -> None:
    if not words:  # move text is checked when the move is played, not here
        assert parse(text).games[0].actions[0].text == "8/5 6/5 banana"
        return
    with pytest.raises(MatFileError) as error:
        parse(text)
    assert error.value.line == line
    assert words in str(error.value)
    assert str(error.value).startswith(f"line {line}: ") or line == 0


def test_the_error_survives_the_trip_from_a_worker_process() -> None:
    error = pickle.loads(pickle.dumps(MatFileError(7, "'x' is not a legal play")))
    assert (error.line, str(error)) == (7, "line 7: 'x' is not a legal play")
