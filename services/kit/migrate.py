"""Apply a service's Alembic migrations: at service start and by ``tavla migrate``.

A start whose database is already at the newest revision (every restart, every replica
after the first) skips Alembic altogether: :func:`upgrade_async` reads the head from the
revision files' own ``revision`` and ``down_revision`` lines and the database's
``alembic_version`` row, and migrates only when they differ. That check is exact or
stands aside: any file it cannot read as plain literals, a branch, a gap in the chain or
a table it cannot read sends the start through Alembic as before. Alembic itself (and
mako, its templates) is imported only when a migration runs: about a tenth of a second
of CPU at each start of a process (docs/testing.md).
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

if TYPE_CHECKING:
    from alembic.config import Config

_KIT = Path(__file__).resolve().parent
_SERVICES = _KIT.parent


def _versions(service: str) -> Path:
    versions = _SERVICES / service / "migrations"
    if not versions.is_dir():
        raise FileNotFoundError(f"service {service!r} has no migrations folder at {versions}")
    return versions


def alembic_config(service: str, url: str) -> Config:
    from services.kit.lean_imports import import_without

    # Alembic imports mako (its templates for new revisions), and mako's error pages import
    # pygments whenever it is installed, for syntax highlighting nothing here shows.
    import_without("alembic.command", hidden="pygments")
    from alembic.config import Config

    versions = _versions(service)
    config = Config()
    config.set_main_option("path_separator", "os")
    config.set_main_option("script_location", str(_KIT / "alembic"))
    config.set_main_option("version_locations", str(versions))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(service: str, url: str) -> None:
    """Bring the service's database to the newest revision (blocking), through Alembic."""
    config = alembic_config(service, url)
    from alembic import command

    command.upgrade(config, "head")


async def upgrade_async(service: str, url: str) -> None:
    """:func:`upgrade`, unless the database is already at the newest revision."""
    # A database never migrated (no version table) goes to Alembic at once; the revision
    # files are read only for one that has a version.
    revisions = await database_revisions(url)
    if len(revisions) == 1 and revisions == {script_head(service)}:
        return
    # The shared env.py runs its own event loop, so it needs a thread of its own.
    await asyncio.to_thread(upgrade, service, url)


def script_head(service: str) -> str | None:
    """The service's newest revision, read from its revision files without importing them;
    None where that reading could differ from Alembic's (then Alembic decides)."""
    return head_of(_versions(service))


def head_of(versions: Path) -> str | None:
    """:func:`script_head` of the revision files in ``versions``."""
    parents: dict[str, str | None] = {}
    # The files Alembic loads from a version location: its .py files but __init__.py and
    # editors' lock files (".#name").
    for path in versions.glob("*.py"):
        if path.name == "__init__.py" or path.name.startswith(".#"):
            continue
        declared = _declared(path)
        if declared is None or declared[0] in parents:
            return None
        parents[declared[0]] = declared[1]
    roots = [rev for rev, parent in parents.items() if parent is None]
    parent_of = set(parents.values())
    heads = [rev for rev in parents if rev not in parent_of]
    if len(roots) != 1 or len(heads) != 1:
        return None
    if any(parent is not None and parent not in parents for parent in parents.values()):
        return None
    # One root, one head, every parent present: a single chain (each revision has at most
    # one parent and one child, or there would be a second head), unless it holds a cycle,
    # which walking from the head would not leave.
    seen, revision = 0, heads[0]
    walked: str | None = revision
    while walked is not None and seen <= len(parents):
        walked, seen = parents[walked], seen + 1
    return heads[0] if seen == len(parents) else None


_NAMES = frozenset({"revision", "down_revision", "depends_on"})
# What could set a module's globals other than a plain assignment.
_DYNAMIC = frozenset({"globals", "vars", "exec", "eval", "setattr", "__dict__", "sys"})


def _declared(path: Path) -> tuple[str, str | None] | None:
    """A revision file's (revision, down_revision), when both are assigned once, at module
    level, as plain string literals (down_revision may be None), nothing else in the file
    could bind them, and it declares no dependency (``depends_on`` absent or None);
    otherwise None."""
    try:
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    if any(_dynamic(node) for node in ast.walk(module)):
        return None
    found: dict[str, list[object]] = {}
    for statement in module.body:
        for name, value in _assignments(statement):
            found.setdefault(name, []).append(value)
    revision = found.get("revision", [])
    parent = found.get("down_revision", [])
    if len(revision) != 1 or len(parent) != 1 or found.get("depends_on", [None]) != [None]:
        return None
    if not isinstance(revision[0], str) or not (parent[0] is None or isinstance(parent[0], str)):
        return None
    return revision[0], parent[0]


_UNREADABLE = object()  # an assigned value that is not a plain literal


def _assignments(statement: ast.stmt) -> list[tuple[str, object]]:
    """The names among ``_NAMES`` a module-level statement binds, with their literal value
    (or ``_UNREADABLE``). Only ``name = literal`` and ``name: type = literal`` read as
    values; any other statement that could bind one of them makes it unreadable."""
    if (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return [(statement.targets[0].id, _literal(statement.value))]
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        value = _UNREADABLE if statement.value is None else _literal(statement.value)
        return [(statement.target.id, value)]
    return [(name, _UNREADABLE) for name in _bound(statement) & _NAMES]


def _bound(statement: ast.stmt) -> set[str]:
    """Every name the statement (and anything nested in it) could bind: more than it does
    is harmless here (the check stands aside)."""
    names: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
    return names


def _dynamic(node: ast.AST) -> bool:
    """A use of what could set module globals without naming them (``globals()``,
    ``exec``, ``setattr``, ``sys.modules``...)."""
    if isinstance(node, ast.Name):
        return node.id in _DYNAMIC
    return isinstance(node, ast.Attribute) and node.attr in _DYNAMIC


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return _UNREADABLE


async def database_revisions(url: str) -> set[str]:
    """The revisions in the database's ``alembic_version`` table (none when it has no such
    table: a database Alembic never migrated)."""
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            table = await connection.scalar(text("SELECT to_regclass('alembic_version')"))
            if table is None:
                return set()
            rows = await connection.scalars(text("SELECT version_num FROM alembic_version"))
            return set(rows)
    finally:
        await engine.dispose()
