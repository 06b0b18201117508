"""What a player is trying to do; the rules and the fail-closed policy depend on it."""

from __future__ import annotations

from enum import StrEnum


class Purpose(StrEnum):
    """Purpose names as in the proto, lower case (``PURPOSE_PLAY_REAL_MONEY`` is ``play_real``)."""

    REGISTER = "register"
    LOGIN = "login"
    DEPOSIT = "deposit"
    WITHDRAW = "withdraw"
    PLAY_REAL = "play_real"
    PLAY_MONEY = "play_money"


# Purposes that move or stake real money: every doubt blocks them (fail closed).
REAL_MONEY = frozenset({Purpose.DEPOSIT, Purpose.WITHDRAW, Purpose.PLAY_REAL})
# Purposes that open or enter an account: a doubt is flagged for review, not blocked.
ACCOUNT = frozenset({Purpose.REGISTER, Purpose.LOGIN})
