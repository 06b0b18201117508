"""Apply a service's Alembic migrations: at service start and by ``tavla migrate``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.kit.lean_imports import import_without

# Alembic imports mako (its templates for new revisions), and mako's error pages import
# pygments whenever it is installed, for syntax highlighting nothing here shows.
import_without("alembic.command", hidden="pygments")
from alembic import command  # noqa: E402
from alembic.config import Config  # noqa: E402

_KIT = Path(__file__).resolve().parent
_SERVICES = _KIT.parent


def alembic_config(service: str, url: str) -> Config:
    versions = _SERVICES / service / "migrations"
    if not versions.is_dir():
        raise FileNotFoundError(f"service {service!r} has no migrations folder at {versions}")
    config = Config()
    config.set_main_option("path_separator", "os")
    config.set_main_option("script_location", str(_KIT / "alembic"))
    config.set_main_option("version_locations", str(versions))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(service: str, url: str) -> None:
    """Bring the service's database to the newest revision (blocking)."""
    command.upgrade(alembic_config(service, url), "head")


async def upgrade_async(service: str, url: str) -> None:
    # The shared env.py runs its own event loop, so it needs a thread of its own.
    await asyncio.to_thread(upgrade, service, url)
