"""A service's keys are loaded at start; anything missing stops it, naming the variable."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from services.kit.authn import Access
from services.kit.config import ConfigError, Settings
from services.kit.credentials import load_service_credentials, player_verification
from services.kit.devstack.keys import ensure_service_keys
from services.kit.keys import key_id, private_pem, public_pem
from services.kit.player_tokens import StaticKeys
from services.kit.service_tokens import ServiceTokenMinter
from tavla.common.v1 import auth_pb2
from tests.support.identity import minter

BASE = {
    "TAVLA_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:5432/tavla_wallet",
    "TAVLA_KAFKA_BOOTSTRAP": "127.0.0.1:9092",
}


def settings(key_file: Path, public_dir: Path, **extra: str) -> Settings:
    return Settings.from_env(
        "wallet",
        {
            **BASE,
            "TAVLA_SERVICE_KEY_FILE": str(key_file),
            "TAVLA_SERVICE_PUBLIC_KEYS_DIR": str(public_dir),
            **extra,
        },
    )


def test_the_keys_of_a_dev_run_load(tmp_path: Path) -> None:
    keys = ensure_service_keys(tmp_path, ["wallet", "game"])
    loaded = load_service_credentials(
        settings(keys.private_key_file("wallet"), keys.public_keys_dir)
    )
    assert loaded.minter.service == "wallet"
    assert loaded.verifier.known_services == ["game", "wallet"]


def test_dev_keys_are_private_and_kept_between_runs(tmp_path: Path) -> None:
    first = ensure_service_keys(tmp_path, ["game"])
    before = first.private_key_file("game").read_bytes()
    again = ensure_service_keys(tmp_path, ["game"])
    assert again.private_key_file("game").read_bytes() == before
    mode = stat.S_IMODE(again.private_key_file("game").stat().st_mode)
    assert mode == 0o600


@pytest.mark.parametrize("problem", ["missing", "not-pem", "rsa"])
def test_a_bad_service_key_names_its_variable(tmp_path: Path, problem: str) -> None:
    key_file = tmp_path / "key.pem"
    if problem == "not-pem":
        key_file.write_text("hello")
    elif problem == "rsa":
        key_file.write_bytes(
            rsa.generate_private_key(65537, 2048).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    with pytest.raises(ConfigError, match="TAVLA_SERVICE_KEY_FILE"):
        load_service_credentials(settings(key_file, tmp_path))


def test_a_missing_public_keys_directory_names_its_variable(tmp_path: Path) -> None:
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(private_pem(ec.generate_private_key(ec.SECP256R1())))
    with pytest.raises(ConfigError, match="TAVLA_SERVICE_PUBLIC_KEYS_DIR"):
        load_service_credentials(settings(key_file, tmp_path / "nowhere"))


def test_public_keys_of_one_service_under_two_names_are_both_accepted(tmp_path: Path) -> None:
    """During a rotation: game.pem (current) and game.next.pem (the next key)."""
    keys = ensure_service_keys(tmp_path, ["wallet"])
    current, upcoming = (ec.generate_private_key(ec.SECP256R1()) for _ in range(2))
    (keys.public_keys_dir / "game.pem").write_bytes(public_pem(current.public_key()))
    (keys.public_keys_dir / "game.next.pem").write_bytes(public_pem(upcoming.public_key()))
    loaded = load_service_credentials(
        settings(keys.private_key_file("wallet"), keys.public_keys_dir)
    )
    for key in (current, upcoming):
        token = ServiceTokenMinter("game", key).token("wallet")
        assert loaded.verifier.caller(token) == "game"


PLAYER_TABLE = {"/tavla.wallet.v1.WalletService/GetBalances": Access(auth_pb2.ACCESS_PLAYER)}
SERVICE_TABLE = {"/tavla.wallet.v1.WalletService/PlaceHold": Access(auth_pb2.ACCESS_SERVICE)}


def test_serving_player_methods_needs_the_accounts_address(tmp_path: Path) -> None:
    config = settings(tmp_path / "k.pem", tmp_path)
    with pytest.raises(ConfigError, match="TAVLA_ACCOUNTS_ADDRESS is required"):
        player_verification(config, PLAYER_TABLE, None, minter("wallet"))
    assert player_verification(config, SERVICE_TABLE, None, minter("wallet")).verifier is None
    public = ec.generate_private_key(ec.SECP256R1()).public_key()
    own = StaticKeys({key_id(public): public})
    assert player_verification(config, PLAYER_TABLE, own, minter("wallet")).jwks is None
