"""A table-stakes game: the cube refused past the cap, the result capped, the cap shown.

The table plays for 2.50 EUR a point (250 minor units). With 10.00 at risk (1000, the
poorer player's remaining stake) the cube may reach 4 (250 x 4 = 1000) but not 8
(2000); at cube 2 a backgammon counts as a gammon (250 x 2 x 2 = 1000 <= 1000 < 1500).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from services.game import codec, domain
from services.game.domain import Action, Kind, Status, TableRules
from services.game.views import game_view
from services.kit.errors import FailedPrecondition, InvalidArgument
from services.kit.money_bounds import AmountOutOfBounds, MoneyBounds
from tests.unit.game.test_game_domain import act, at_cube, new_session, rules, to_roll


def stakes(at_risk: int = 1000, bring_in: int = 1000) -> TableRules:
    return replace(rules(), table_stakes_minor=bring_in, at_risk_minor=at_risk)


def test_the_cube_may_reach_only_what_the_poorer_stake_covers() -> None:
    session = to_roll(new_session(stakes()))
    assert session.rules.max_cube() == 4
    assert game_view(session, with_plays=False).table_stakes_max_cube == 4
    taken = act(act(session, Action.DOUBLE).session, Action.TAKE).session  # cube 2
    assert taken.game.cube.value == 2
    owner_on_roll = at_cube(to_roll(taken), 2, 64)
    cube_four = act(act(owner_on_roll, Action.DOUBLE).session, Action.TAKE).session
    assert cube_four.game.cube.value == 4
    with pytest.raises(FailedPrecondition, match="may not reach 8 in this game \\(at most 4\\)"):
        act(at_cube(to_roll(cube_four), 4, 64), Action.DOUBLE)


def test_a_beaver_past_the_cap_is_refused() -> None:
    session = to_roll(new_session(replace(stakes(), beaver=True)))
    offered = act(session, Action.DOUBLE).session  # to 2: covered
    with pytest.raises(FailedPrecondition, match="may not reach 4"):
        act(replace(offered, rules=replace(offered.rules, at_risk_minor=999)), Action.BEAVER)


def test_a_backgammon_counts_only_as_far_as_the_amount_at_risk_covers() -> None:
    session = to_roll(new_session(stakes()))
    taken = act(act(session, Action.DOUBLE).session, Action.TAKE).session  # cube 2
    resigner = taken.awaiting or 0
    offered = act(to_roll(taken), Action.RESIGN, player=resigner, text="3").session
    ended = act(offered, Action.ACCEPT_RESIGN)
    outcome = ended.session.last_outcome
    assert outcome is not None and ended.session.status is Status.FINISHED
    assert (outcome.cube_value, outcome.points) == (2, 4)  # 2 x 2, not 2 x 3
    fact = next(f for f in ended.facts if f.DESCRIPTOR.name == "GameEnded")
    assert fact.points == 4  # type: ignore[attr-defined]
    assert fact.table_stakes_at_risk_minor_units == 1000  # type: ignore[attr-defined]


def test_an_uncapped_result_counts_in_full() -> None:
    session = to_roll(new_session(stakes(at_risk=2000, bring_in=1000)))
    offered = act(session, Action.RESIGN, text="3").session
    outcome = act(offered, Action.ACCEPT_RESIGN).session.last_outcome
    assert outcome is not None and outcome.points == 3  # 750 <= 2000


def test_table_stakes_hold_no_more_as_the_cube_turns_and_start_on_the_amount_at_risk() -> None:
    session = new_session(stakes(at_risk=800, bring_in=1000))
    assert domain.cover_needed(session, 4) == 0
    assert domain.opening_hold(session.rules) == 800
    assert domain.largest_loss(session.rules, MoneyBounds.defaults()) == 800


def test_the_rules_are_checked_and_stored() -> None:
    session = new_session(stakes(at_risk=800, bring_in=1000))
    assert codec.rules_from_state(codec.rules_to_state(session.rules)) == session.rules
    with pytest.raises(InvalidArgument, match="money-game option"):
        replace(stakes(), kind=Kind.MATCH, match_length=3, crawford=True).validate()
    with pytest.raises(InvalidArgument, match="must cover a game at cube 1"):
        stakes(at_risk=249).validate()
    with pytest.raises(InvalidArgument, match="at most both bring-ins together"):
        stakes(at_risk=2001).validate()
    bounds = MoneyBounds.from_env({"TAVLA_MONEY_MAX_TABLE_EXPOSURE_EUR": "999"})
    with pytest.raises(AmountOutOfBounds, match="TAVLA_MONEY_MAX_TABLE_EXPOSURE_EUR"):
        domain.largest_loss(stakes(), bounds)


def test_a_session_stored_before_table_stakes_reads_as_an_ordinary_game() -> None:
    state = codec.rules_to_state(rules())
    del state["table_stakes"]
    assert not codec.rules_from_state(state).table_stakes
