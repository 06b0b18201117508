"""Domain errors of the rules library: every refusal says what was wrong and what is allowed."""

from __future__ import annotations


class RulesError(ValueError):
    """Base class: an action or input that the rules of backgammon do not allow."""


class InvalidPosition(RulesError):
    """A board, Position ID or Match ID that cannot describe a real game."""


class InvalidDice(RulesError):
    """Dice outside 1..6, or the wrong number of them."""


class IllegalPlay(RulesError):
    """A checker play that is not among the legal plays for the position and roll."""


class InvalidNotation(RulesError):
    """Move text that is not GNU Backgammon notation."""


class CubeNotAvailable(RulesError):
    """A double, take, drop or beaver that the cube state or the match rules forbid."""


class ResignationError(RulesError):
    """A resignation offer or answer that is not allowed now."""


class WrongTurn(RulesError):
    """An action taken out of turn or in the wrong phase of the game."""


class MatchOver(RulesError):
    """An action on a match or game that has already finished."""


class DiceVerificationError(RulesError):
    """A game's rolls do not match the server seed it committed to."""
