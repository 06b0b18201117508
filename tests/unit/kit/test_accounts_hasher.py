"""The accounts service's password hasher: production's argon2 parameters unless a stack
that says it is not production asks for cheap ones by their loud name."""

from __future__ import annotations

import argon2
import pytest

from services.accounts.main import CHEAP_HASHES_FLAG, NOT_PRODUCTION_FLAG, build_hasher
from services.kit.config import ConfigError, Env


def parameters(hasher: argon2.PasswordHasher) -> argon2.Parameters:
    return argon2.extract_parameters(hasher.hash("a password"))


def test_by_default_hashes_use_the_librarys_parameters() -> None:
    made = parameters(build_hasher(Env({})))
    assert made == parameters(argon2.PasswordHasher())
    assert (made.type, made.time_cost, made.memory_cost) == (argon2.Type.ID, 3, 64 * 1024)


def test_cheap_hashes_are_refused_unless_the_stack_is_not_production() -> None:
    with pytest.raises(ConfigError, match=NOT_PRODUCTION_FLAG):
        build_hasher(Env({CHEAP_HASHES_FLAG: "true"}))


def test_a_stack_that_is_not_production_may_ask_for_cheap_argon2id_hashes() -> None:
    hasher = build_hasher(Env({CHEAP_HASHES_FLAG: "true", NOT_PRODUCTION_FLAG: "true"}))
    made = parameters(hasher)
    assert (made.type, made.time_cost, made.memory_cost, made.parallelism) == (
        argon2.Type.ID, 1, 8 * 1024, 1,
    )
    assert hasher.verify(hasher.hash("a password"), "a password")
