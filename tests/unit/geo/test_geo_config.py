"""Geo configuration: both databases are required, and a bad one stops the process naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.geo.config import GeoSettings
from services.geo.devdata import write_anonymous, write_city
from services.geo.main import build_service
from services.kit.config import ConfigError


def test_no_database_configured_is_refused_naming_both_variables() -> None:
    # Once, geo with neither database served health only: a production setting
    # must never default to "no decision".
    both = "TAVLA_GEO_CITY_DB and TAVLA_GEO_ANONYMOUS_DB are required"
    with pytest.raises(ConfigError, match=both):
        GeoSettings.from_env({})


def test_tavla_serve_geo_without_databases_exits_2_naming_them(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from services.cli import main

    base = {
        "TAVLA_DATABASE_URL": "postgresql+asyncpg://postgres@127.0.0.1:9/tavla_geo",
        "TAVLA_KAFKA_BOOTSTRAP": "127.0.0.1:9",
        "TAVLA_SERVICE_KEY_FILE": "/nonexistent/geo.key.pem",
        "TAVLA_SERVICE_PUBLIC_KEYS_DIR": "/nonexistent/public",
    }
    for name, value in base.items():
        monkeypatch.setenv(name, value)
    for name in ("TAVLA_GEO_CITY_DB", "TAVLA_GEO_ANONYMOUS_DB"):
        monkeypatch.delenv(name, raising=False)
    assert main(["serve", "geo"]) == 2
    err = capsys.readouterr().err
    assert "tavla serve geo:" in err
    assert "TAVLA_GEO_CITY_DB and TAVLA_GEO_ANONYMOUS_DB are required" in err


def test_a_city_database_without_an_anonymous_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="TAVLA_GEO_ANONYMOUS_DB"):
        GeoSettings.from_env({"TAVLA_GEO_CITY_DB": "/x/city.mmdb"})


def test_an_anonymous_database_without_a_city_one_is_refused() -> None:
    with pytest.raises(ConfigError, match="TAVLA_GEO_CITY_DB"):
        GeoSettings.from_env({"TAVLA_GEO_ANONYMOUS_DB": "/x/anonymous.mmdb"})


def test_all_three_variables_are_read() -> None:
    settings = GeoSettings.from_env(
        {
            "TAVLA_GEO_CITY_DB": "/x/city.mmdb",
            "TAVLA_GEO_ANONYMOUS_DB": "/x/anonymous.mmdb",
            "TAVLA_GEO_RULES": "/x/rules.toml",
        }
    )
    assert settings == GeoSettings(
        Path("/x/city.mmdb"), Path("/x/anonymous.mmdb"), Path("/x/rules.toml")
    )


def test_a_missing_city_database_names_its_variable(tmp_path: Path) -> None:
    anonymous = write_anonymous(tmp_path / "anonymous.mmdb")
    with pytest.raises(ConfigError, match="TAVLA_GEO_CITY_DB"):
        build_service(GeoSettings(tmp_path / "missing.mmdb", anonymous))


def test_a_missing_anonymous_database_names_its_variable(tmp_path: Path) -> None:
    city = write_city(tmp_path / "city.mmdb")
    with pytest.raises(ConfigError, match="TAVLA_GEO_ANONYMOUS_DB"):
        build_service(GeoSettings(city, tmp_path / "missing.mmdb"))


def test_a_bad_rule_file_names_its_variable(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('version = "v"\n[[jurisdiction]]\ncode = "FL"\npurposes = ["deposit"]\n')
    city, anonymous = write_city(tmp_path / "c.mmdb"), write_anonymous(tmp_path / "a.mmdb")
    with pytest.raises(ConfigError, match="TAVLA_GEO_RULES"):
        build_service(GeoSettings(city, anonymous, rules))


def test_an_operator_rule_file_is_used(tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('version = "op-1"\n[[jurisdiction]]\ncode = "MT"\npurposes = ["deposit"]\n')
    city, anonymous = write_city(tmp_path / "c.mmdb"), write_anonymous(tmp_path / "a.mmdb")
    service = build_service(GeoSettings(city, anonymous, rules))
    try:
        version, entries = service.jurisdictions()
        assert (version, [entry.code for entry in entries]) == ("op-1", ["MT"])
    finally:
        service.close()
