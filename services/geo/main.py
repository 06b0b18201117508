"""Wiring for the geo service: settings -> databases and rules -> service -> servicer.

The database paths come from :mod:`services.geo.config`, read before anything
starts, so a missing or unreadable database stops the process with a message
naming the variable or the path: geo never runs without both databases.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from services.geo.api import GeoApi
from services.geo.config import ANONYMOUS_DB, CITY_DB, RULES, GeoSettings
from services.geo.domain.rules import InvalidRules, Rules, load_rules_file, shipped_rules
from services.geo.events import DecisionLog, connector
from services.geo.lookup import AnonymousDatabase, CityDatabase, DatabaseError
from services.geo.service import GeoService
from services.kit.config import ConfigError, Settings
from services.kit.server import Runtime, Wiring, run_service
from tavla.geo.v1 import geo_pb2, geo_pb2_grpc

Loop = Callable[[], Coroutine[Any, Any, None]]


def build_service(geo: GeoSettings) -> GeoService:
    """Open the databases and rules; any failure is a ConfigError naming the variable."""
    try:
        rules: Rules = load_rules_file(geo.rules) if geo.rules else shipped_rules()
    except (OSError, InvalidRules) as error:
        raise ConfigError(f"{RULES}={geo.rules}: {error}") from None
    try:
        city = CityDatabase.open(geo.city_db)
    except DatabaseError as error:
        raise ConfigError(f"{CITY_DB}: {error}") from None
    try:
        anonymous = AnonymousDatabase.open(geo.anonymous_db)
    except DatabaseError as error:
        city.close()
        raise ConfigError(f"{ANONYMOUS_DB}: {error}") from None
    return GeoService(rules, city, anonymous)


def reloader(service: GeoService, interval_seconds: float) -> Loop:
    """A background loop that swaps in database files geoipupdate replaced."""

    async def reload_databases() -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            service.refresh_databases()

    return reload_databases


def wiring(runtime: Runtime, service: GeoService, reload_seconds: float = 60.0) -> Wiring:
    log = DecisionLog(connector(runtime.settings.database_url), source=runtime.settings.service,
                      clock=runtime.clock, on_commit=runtime.relay.wake)  # fmt: skip
    api = GeoApi(service, log)
    return Wiring(
        servicers=[(geo_pb2_grpc.add_GeoServiceServicer_to_server, api)],
        service_names=[geo_pb2.DESCRIPTOR.services_by_name["GeoService"].full_name],
        background=[reloader(service, reload_seconds)],
        on_stop=[log.close],
    )


async def serve(settings: Settings) -> None:
    geo = GeoSettings.from_env()
    service = build_service(geo)
    try:
        await run_service(settings, lambda runtime: wiring(runtime, service, geo.reload_seconds))
    finally:
        service.close()
