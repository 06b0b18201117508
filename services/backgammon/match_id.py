"""GNU Backgammon Match IDs: the 66-bit match and cube state in base64, bit-exact both ways.

Fields, least significant bit first (gnubg's layout): cube value as log2 (4 bits),
cube owner (2: 0/1 player, 3 centred), player on roll (1), Crawford game (1), game
state (3), player to decide (1), double offered (1), resignation level (2), dice
(3 + 3), match length (15), score of player 0 (15), score of player 1 (15), and
"Jacoby rule off" (1). Nine bytes, base64 without padding: 12 characters.
``cAkKAAAAAAAA`` is a money game, Jacoby rule on, cube centred, player 1 on roll
with 4-2 rolled.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from enum import IntEnum

from services.backgammon.errors import InvalidPosition

_FIELDS: tuple[tuple[str, int], ...] = (
    ("cube_log2", 4),
    ("cube_owner", 2),
    ("on_roll", 1),
    ("crawford", 1),
    ("game_state", 3),
    ("turn", 1),
    ("doubled", 1),
    ("resignation", 2),
    ("die1", 3),
    ("die2", 3),
    ("match_length", 15),
    ("score0", 15),
    ("score1", 15),
    ("no_jacoby", 1),  # gnubg stores "not Jacoby": set in matches and Jacoby-free money play
)
_BYTES = 9
CENTERED = 3


class GameStateCode(IntEnum):
    """gnubg's ``gamestate`` values."""

    NONE = 0
    PLAYING = 1
    OVER = 2
    RESIGNED = 3
    DROPPED = 4


@dataclass(frozen=True, slots=True)
class MatchIdState:
    """Everything a Match ID holds. Players are 0 and 1; ``cube_owner`` None = centred."""

    cube_value: int = 1
    cube_owner: int | None = None
    on_roll: int = 0
    crawford: bool = False
    game_state: GameStateCode = GameStateCode.PLAYING
    turn: int = 0
    doubled: bool = False
    resignation: int = 0
    dice: tuple[int, int] = (0, 0)
    match_length: int = 0
    score: tuple[int, int] = (0, 0)
    jacoby: bool = False


def _fields_of(state: MatchIdState) -> dict[str, int]:
    value = state.cube_value
    if value < 1 or value & (value - 1) or value > 1 << 15:
        raise InvalidPosition(f"cube value must be a power of two up to 32768, got {value}")
    return {
        "cube_log2": value.bit_length() - 1,
        "cube_owner": CENTERED if state.cube_owner is None else state.cube_owner,
        "on_roll": state.on_roll,
        "crawford": int(state.crawford),
        "game_state": int(state.game_state),
        "turn": state.turn,
        "doubled": int(state.doubled),
        "resignation": state.resignation,
        "die1": state.dice[0],
        "die2": state.dice[1],
        "match_length": state.match_length,
        "score0": state.score[0],
        "score1": state.score[1],
        "no_jacoby": int(not state.jacoby),
    }


def encode(state: MatchIdState) -> str:
    """The 12-character Match ID of ``state``."""
    values = _fields_of(state)
    packed = bit = 0
    for name, width in _FIELDS:
        value = values[name]
        if not 0 <= value < 1 << width:
            raise InvalidPosition(f"{name}={value} does not fit a Match ID")
        packed |= value << bit
        bit += width
    return base64.b64encode(packed.to_bytes(_BYTES, "little")).decode("ascii")


def decode(match_id: str) -> MatchIdState:
    """The match state a 12-character Match ID describes."""
    text = match_id.strip()
    if len(text) != 12:
        raise InvalidPosition(f"a Match ID has 12 characters, got {len(text)}: {text!r}")
    try:
        packed = int.from_bytes(base64.b64decode(text, validate=True), "little")
    except (binascii.Error, ValueError) as exc:
        raise InvalidPosition(f"not base64: {text!r}") from exc
    values: dict[str, int] = {}
    bit = 0
    for name, width in _FIELDS:
        values[name] = (packed >> bit) & ((1 << width) - 1)
        bit += width
    if values["cube_owner"] == 2:
        raise InvalidPosition("cube owner 2 is not a valid Match ID value")
    try:
        game_state = GameStateCode(values["game_state"])
    except ValueError as exc:
        raise InvalidPosition(f"game state {values['game_state']} is unknown") from exc
    return MatchIdState(
        cube_value=1 << values["cube_log2"],
        cube_owner=None if values["cube_owner"] == CENTERED else values["cube_owner"],
        on_roll=values["on_roll"],
        crawford=bool(values["crawford"]),
        game_state=game_state,
        turn=values["turn"],
        doubled=bool(values["doubled"]),
        resignation=values["resignation"],
        dice=(values["die1"], values["die2"]),
        match_length=values["match_length"],
        score=(values["score0"], values["score1"]),
        jacoby=not values["no_jacoby"],
    )
