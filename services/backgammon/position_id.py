"""GNU Backgammon Position IDs: 80-bit keys in base64, encoded and decoded bit-exactly.

The key lists, for the opponent's 25 slots and then the player on roll's 25 slots
(GNU Backgammon's ``anBoard[0]`` then ``anBoard[1]``), each count as that many 1-bits
followed by a 0-bit, packed least significant bit first; the 10 bytes are base64
without padding (14 characters). The starting position is ``4HPwATDgc/ABMA``.
"""

from __future__ import annotations

import base64
import binascii

from services.backgammon.board import BAR, CHECKERS, Board
from services.backgammon.errors import InvalidPosition

KEY_BYTES = 10
ID_LENGTH = 14


# A slot's bits as text, the first bit rightmost: ``count`` 1-bits after a 0-bit.
_SLOT_BITS = tuple("0" + "1" * count for count in range(CHECKERS + 1))


def encode_key(board: Board) -> bytes:
    """The 10-byte Position Key of ``board``.

    The bits are joined as text, the last slot first, and read as one binary number: a
    third faster than shifting them in one slot at a time (the move generator's tests
    encode every legal result of thousands of positions).
    """
    slots = (*board.opponent, *board.player)
    bits = "".join([_SLOT_BITS[count] for count in reversed(slots)])
    return int(bits, 2).to_bytes(KEY_BYTES, "little")


def decode_key(key: bytes) -> Board:
    """The board described by a 10-byte Position Key."""
    if len(key) != KEY_BYTES:
        raise InvalidPosition(f"a position key has 10 bytes, got {len(key)}")
    value = int.from_bytes(key, "little")
    sides: list[list[int]] = [[0] * (BAR + 1), [0] * (BAR + 1)]
    side = slot = 0
    for bit in range(KEY_BYTES * 8):
        if side == 2:
            if value >> bit:
                raise InvalidPosition("position key has checkers beyond the 50 slots")
            break
        if (value >> bit) & 1:
            sides[side][slot] += 1
        else:
            slot += 1
            if slot == BAR + 1:
                side, slot = side + 1, 0
    if side < 2:
        raise InvalidPosition("position key ends before both sides are described")
    return Board(tuple(sides[1]), tuple(sides[0]))


def encode(board: Board) -> str:
    """The 14-character Position ID of ``board`` (player on roll = ``board.player``)."""
    return base64.b64encode(encode_key(board)).decode("ascii").rstrip("=")


def decode(position_id: str) -> Board:
    """The board for a Position ID; ``player`` is the side on roll."""
    text = position_id.strip()
    if len(text) != ID_LENGTH:
        raise InvalidPosition(f"a Position ID has 14 characters, got {len(text)}: {text!r}")
    try:
        key = base64.b64decode(text + "==", validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidPosition(f"not base64: {text!r}") from exc
    return decode_key(key)
