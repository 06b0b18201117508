"""The benchmarks' identities (`services/kit/benchstack.py`) are the ones production checks.

A run dir's player tokens must pass the kit's access-token verifier (what every
service runs) with the run dir's public key, and its service tokens the kit's
service-token verifier with the run dir's public keys directory (what every
service process is given), naming the caller the benchmark stands in for. Without
this the benchmarks would measure refused calls. Pure: no process is started.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import jwt
import pytest

from services.geo.devdata import MALTA_IP
from services.kit.benchstack import BenchKeys
from services.kit.client_signals import ClientSignals, signals_from_metadata
from services.kit.devstack.keys import load_private_key
from services.kit.errors import Unauthenticated
from services.kit.keys import key_id
from services.kit.player_tokens import PlayerTokenVerifier, StaticKeys
from services.kit.service_tokens import ServiceTokenVerifier, load_public_keys


def test_player_tokens_pass_the_services_verifier_as_the_player(tmp_path: Path) -> None:
    keys = BenchKeys.generate(tmp_path)
    public = load_private_key(keys.signing_key_file).public_key()
    verifier = PlayerTokenVerifier(StaticKeys({key_id(public): public}))
    players = keys.players()
    metadata = players("acct-1")
    assert players("acct-1") is metadata  # minted once per player
    headers = dict(metadata)
    token = headers["authorization"].removeprefix("Bearer ")
    assert asyncio.run(verifier.subject(token)) == "acct-1"
    # Where geo places them, as accounts and the gateway would say: a Malta resident in Malta.
    assert jwt.decode(token, options={"verify_signature": False})["residence"] == "MT"
    assert signals_from_metadata(metadata) == ClientSignals(address=MALTA_IP)


def test_player_tokens_of_another_run_dir_are_refused(tmp_path: Path) -> None:
    ours = BenchKeys.generate(tmp_path / "ours")
    theirs = BenchKeys.generate(tmp_path / "theirs")
    public = load_private_key(ours.signing_key_file).public_key()
    verifier = PlayerTokenVerifier(StaticKeys({key_id(public): public}))
    value = dict(theirs.players()("acct-1"))["authorization"]
    with pytest.raises(Unauthenticated):
        asyncio.run(verifier.subject(value.removeprefix("Bearer ")))


def test_service_tokens_name_the_caller_the_bench_stands_in_for(tmp_path: Path) -> None:
    keys = BenchKeys.generate(tmp_path)
    callers = load_public_keys(keys.service_keys.public_keys_dir)
    assert (
        ServiceTokenVerifier("game", callers).caller(keys.minter("matchmaking").token("game"))
        == "matchmaking"
    )
    assert (
        ServiceTokenVerifier("wallet", callers).caller(keys.minter("game").token("wallet"))
        == "game"
    )
    with pytest.raises(Unauthenticated):  # addressed to the game, not the wallet
        ServiceTokenVerifier("wallet", callers).caller(keys.minter("matchmaking").token("game"))


def test_a_missing_dev_run_dir_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVLA_DEV_DIR", str(tmp_path))
    with pytest.raises(SystemExit, match="start `tavla dev` first"):
        BenchKeys.of_dev_stack()


def test_geo_gets_the_dev_databases_it_cannot_start_without() -> None:
    from contextlib import ExitStack

    from services.geo.devdata import FLORIDA_IP
    from services.geo.lookup import CityDatabase
    from services.kit.benchstack import BenchStack

    with ExitStack() as stack:
        bench = BenchStack(stack)  # starts nothing until a server is needed
        env = bench.geo_dev_databases()
        city = CityDatabase.open(Path(env["TAVLA_GEO_CITY_DB"]))
        try:
            place = city.locate(FLORIDA_IP)
            assert place is not None and place.region == "US-FL"
        finally:
            city.close()
        stamp = Path(env["TAVLA_GEO_CITY_DB"]).stat().st_mtime_ns
        # Written once per run dir: a second geo process does not rewrite a file in use.
        assert bench.geo_dev_databases() == env
        assert Path(env["TAVLA_GEO_CITY_DB"]).stat().st_mtime_ns == stamp
        assert Path(env["TAVLA_GEO_ANONYMOUS_DB"]).exists()
