"""Export a finished match (or money session) as Jellyfish ``.mat`` text with XG-style header tags.

Player 0 is "Player 1" (the left column), player 1 is "Player 2" (the right column).
Each numbered row holds one action per player: ``31: 8/5 6/5``, `` Doubles => 2``,
`` Takes``, `` Drops``; a game ends with ``Wins N point(s)`` in the winner's column.
A money session is written as a "0 point match". GNU Backgammon imports this text
(``import mat``) and reaches the same final score; the integration tests check that.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from services.backgammon.errors import RulesError
from services.backgammon.game import ActionKind, Game
from services.backgammon.match import MatchRules, MatchScore, new_match, record_game

_COLUMN = 42  # width of the row number plus the left player's column (longest cell fits)


@dataclass(frozen=True, slots=True)
class MatHeader:
    site: str
    player1: str
    player2: str
    event_date: dt.date
    stake_minor: int = 0  # stake per point in minor units of ``currency``
    currency: str = "PLAY"
    currency_exponent: int = 2


def _on_off(flag: bool) -> str:
    return "On" if flag else "Off"


def _stake_text(header: MatHeader) -> str:
    if header.currency_exponent == 0:
        return str(header.stake_minor)
    units, cents = divmod(header.stake_minor, 10**header.currency_exponent)
    return f"{units}.{cents:0{header.currency_exponent}d}"


def _header_lines(header: MatHeader, rules: MatchRules) -> list[str]:
    tags = [
        ("Site", header.site),
        ("Player 1", header.player1),
        ("Player 2", header.player2),
        ("EventDate", header.event_date.strftime("%Y.%m.%d")),
        ("Variation", "Backgammon"),
        ("Crawford", _on_off(rules.crawford and not rules.is_money)),
        ("Jacoby", _on_off(rules.jacoby)),
        ("Beaver", _on_off(rules.beavers)),
        ("CubeLimit", str(rules.cube_cap)),
        ("Stake", _stake_text(header)),
        ("Currency", header.currency),
    ]
    return [f'; [{name} "{value.replace(chr(34), chr(39))}"]' for name, value in tags]


def _tokens(game: Game) -> Iterator[tuple[int, str]]:
    """(player, text) per cell, in order: a roll and its play share one cell."""
    pending_roll: tuple[int, int] | None = None
    after_beaver = False
    for action in game.history:
        if after_beaver and action.kind is ActionKind.TAKE:
            # Jellyfish has no token for taking a beaver: "Beavers => 4" already sets the cube.
            after_beaver = False
            continue
        after_beaver = action.kind is ActionKind.BEAVER
        if action.kind is ActionKind.ROLL:
            pending_roll = action.dice
        elif action.kind is ActionKind.PLAY:
            dice = action.dice or pending_roll
            assert dice is not None
            yield action.player, f"{dice[0]}{dice[1]}: {action.notation}".rstrip()
            pending_roll = None
        elif action.kind is ActionKind.DOUBLE:
            yield action.player, f" Doubles => {action.value}"
        elif action.kind is ActionKind.BEAVER:
            yield action.player, f" Beavers => {action.value}"
        elif action.kind is ActionKind.TAKE:
            yield action.player, " Takes"
        elif action.kind is ActionKind.DROP:
            yield action.player, " Drops"
        # Resignation offers have no Jellyfish notation: the "Wins" line records the result.


def _rows(game: Game) -> list[tuple[str, str]]:
    rows: list[list[str | None]] = []
    for player, text in _tokens(game):
        if player == 0:
            if not rows or rows[-1][0] is not None or rows[-1][1] is not None:
                rows.append([None, None])
            rows[-1][0] = text
        else:
            if not rows or rows[-1][1] is not None:
                rows.append([None, None])
            rows[-1][1] = text
    return [(left or "", right or "") for left, right in rows]


def _points_text(points: int) -> str:
    return f"{points} point" if points == 1 else f"{points} points"


def _game_lines(number: int, game: Game, before: MatchScore, header: MatHeader) -> list[str]:
    if game.result is None:
        raise RulesError(f"game {number} is not finished and cannot be exported")
    left_name = f" {header.player1} : {before.score[0]}"
    lines = ["", f" Game {number}", f"{left_name:<{_COLUMN}}{header.player2} : {before.score[1]}"]
    rows = _rows(game)
    after = record_game(before, game.result)
    wins = f"Wins {_points_text(game.result.points)}"
    if after.is_over:
        wins += " and the match"
    winner = game.result.winner
    # As gnubg writes it: "Wins" goes in the winner's cell of the last row when that cell is
    # free (after the opponent's drop on the left), else on a line of its own.
    last = rows[-1] if rows else ("x", "x")
    own_line = bool(last[winner])
    if not own_line:
        rows[-1] = (wins, last[1]) if winner == 0 else (last[0], wins)
    for i, (left, right) in enumerate(rows, start=1):
        lines.append(f"{i:>3}) {left:<{_COLUMN - 5}}{right}".rstrip())
    if own_line:
        lines.append(" " * (6 if winner == 0 else _COLUMN + 1) + wins)
    return lines


def export_match(header: MatHeader, rules: MatchRules, games: Sequence[Game]) -> str:
    """The ``.mat`` text of a finished match or money session (games in order)."""
    if not games:
        raise RulesError("a match with no games cannot be exported")
    lines = _header_lines(header, rules)
    lines += ["", f" {rules.length} point match"]
    score = new_match(rules)
    for number, game in enumerate(games, start=1):
        lines += _game_lines(number, game, score, header)
        assert game.result is not None
        score = record_game(score, game.result)
    return "\n".join(lines) + "\n"


def final_score(rules: MatchRules, games: Sequence[Game]) -> tuple[int, int]:
    """The score after all ``games`` (what an importer must reach)."""
    score = new_match(rules)
    for game in games:
        if game.result is None:
            raise RulesError("an unfinished game has no score")
        score = record_game(score, game.result)
    return score.score
