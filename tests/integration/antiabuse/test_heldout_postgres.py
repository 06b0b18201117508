"""Two ``tavla abuse eval --population held-out`` runs started at once each get a
PostgreSQL of their own (``runner._held_out_databases``): they get different free ports
(the kit's ``free_port``), and should one find its port bound after all, its server must
move on, not use the other's, or the first run to finish stops the server under the other."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier
from urllib.parse import urlsplit

import pytest

from services.antiabuse.evaluation import runner
from services.kit.devstack.postgres import binary, libpq_url


def answers(url: str) -> bool:
    result = subprocess.run(
        [binary("psql"), "--no-psqlrc", "-X", "-q", "-t", "-A", "-d", libpq_url(url),
         "-c", "SELECT current_database()"],
        capture_output=True, text=True, timeout=30, check=False,
    )
    return result.returncode == 0 and result.stdout.strip() == urlsplit(url).path.strip("/")


@pytest.mark.timeout(300)
def test_two_held_out_runs_started_at_once_never_share_a_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TAVLA_DATABASE_URL", raising=False)
    together = Barrier(2)

    def database() -> tuple[str, Callable[[], None]]:
        together.wait()  # both choose a port at the same moment, as two runs started at once
        new_database, stop = runner._held_out_databases()
        return new_database(), stop

    # The threads outlive their servers: the kit ties a server's life to its starting thread.
    with ThreadPoolExecutor(2) as pool:
        first, second = [f.result() for f in [pool.submit(database) for _ in range(2)]]
        try:
            assert urlsplit(first[0]).port != urlsplit(second[0]).port
            assert answers(first[0]) and answers(second[0])
            first[1]()  # the first run ends and stops its server
            assert answers(second[0])
            assert not answers(first[0])
        finally:
            first[1]()
            second[1]()
