"""Match IDs: decode the IDs GNU Backgammon 1.07 printed, re-encode them bit-exactly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.backgammon import match_id
from services.backgammon.errors import InvalidPosition
from services.backgammon.match_id import GameStateCode, MatchIdState

# Each ID below was printed by `gnubg -t` for the state described next to it.
GNUBG_IDS = [
    (
        "cAkKAAAAAAAA",  # money session, Jacoby on, cube centred, player 1 rolled 4-2
        MatchIdState(on_roll=1, turn=1, dice=(4, 2), jacoby=True),
    ),
    (
        "UgnrADAAKAAE",  # 7-point match at 3-5, cube 4 owned by player 1, player 1 rolled 6-2
        MatchIdState(
            cube_value=4, cube_owner=1, on_roll=1, turn=1, dice=(6, 2), match_length=7, score=(3, 5)
        ),
    ),
    (
        "sIGlAEAAEAAE",  # 5-point match at 4-2, Crawford game, player 0 rolled 3-1
        MatchIdState(crawford=True, dice=(3, 1), match_length=5, score=(4, 2)),
    ),
    (
        "cAn3AAAAAAAE",  # 7-point match at 0-0, player 1 won the opening roll with 6-5
        MatchIdState(on_roll=1, turn=1, dice=(6, 5), match_length=7),
    ),
]


@pytest.mark.parametrize(("text", "state"), GNUBG_IDS)
def test_gnubg_match_ids_decode_and_encode_bit_exactly(text: str, state: MatchIdState) -> None:
    assert match_id.decode(text) == state
    assert match_id.encode(state) == text


states = st.builds(
    MatchIdState,
    cube_value=st.sampled_from([1 << n for n in range(16)]),
    cube_owner=st.sampled_from([None, 0, 1]),
    on_roll=st.integers(0, 1),
    crawford=st.booleans(),
    game_state=st.sampled_from(list(GameStateCode)),
    turn=st.integers(0, 1),
    doubled=st.booleans(),
    resignation=st.integers(0, 3),
    dice=st.tuples(st.integers(0, 6), st.integers(0, 6)),
    match_length=st.integers(0, 32767),
    score=st.tuples(st.integers(0, 32767), st.integers(0, 32767)),
    jacoby=st.booleans(),
)


@given(states)
def test_match_ids_round_trip(state: MatchIdState) -> None:
    text = match_id.encode(state)
    assert len(text) == 12
    assert match_id.decode(text) == state


def test_cube_value_must_be_a_power_of_two() -> None:
    with pytest.raises(InvalidPosition, match="power of two"):
        match_id.encode(MatchIdState(cube_value=3))


def test_malformed_match_ids_are_refused() -> None:
    with pytest.raises(InvalidPosition, match="12 characters"):
        match_id.decode("cAkK")
    with pytest.raises(InvalidPosition, match="base64"):
        match_id.decode("cAkKAAAAAA!A")
