"""A service process does not load what it never uses: rich and pygments (console
tracebacks and highlighted error pages, installed by the dev tools), or aiohttp in a
wallet whose payment provider is the sandbox. Each was a tenth to a third of a second
of CPU at every start (docs/testing.md)."""

from __future__ import annotations

import json
import subprocess
import sys

# One interpreter for every check: each service's imports cost a second of CPU.
SCRIPT = """
import json, sys
import services.accounts.main, services.game.main, services.wallet.main
loaded = sorted({m.split('.')[0] for m in sys.modules})
import pygments, rich  # hidden from those imports only
from mako.ext.pygmentplugin import syntax_highlight
import services.wallet.webhooks
print(json.dumps({"loaded": loaded, "later": 'aiohttp' in sys.modules}))
"""


def test_services_load_neither_rich_pygments_nor_an_unused_http_client() -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                            check=True, timeout=120)
    answer = json.loads(result.stdout)
    loaded = set(answer["loaded"])
    assert {"structlog", "alembic", "mako"} <= loaded  # what pulled them in before
    assert not {"rich", "pygments", "aiohttp"} & loaded
    assert answer["later"]  # the real provider's webhooks still bring aiohttp


# `tavla`'s own imports, as its program (argv from sys.argv) and as a test calls main().
PAUSED = """
import gc, json, sys
from services.kit.lean_imports import collector_paused
with collector_paused():
    paused = not gc.isenabled()
    with collector_paused():  # nested: the outer one decides
        import services.game.main
    still_paused = not gc.isenabled()
frozen = gc.get_freeze_count()
from services.cli import main
sys.argv = ["tavla", "dice", "verify", "--help"]
before = gc.get_freeze_count()
try:
    main(["dice", "verify", "--help"])
except SystemExit:
    pass
called = gc.get_freeze_count() - before
import services.accounts.cli
print(json.dumps({"paused": paused and still_paused, "enabled": gc.isenabled(),
                  "frozen": frozen, "called": called}))
"""


def test_imports_run_without_the_collector_and_stay_frozen_out_of_it() -> None:
    result = subprocess.run([sys.executable, "-c", PAUSED], capture_output=True, text=True,
                            check=True, timeout=120)
    answer = json.loads(result.stdout.splitlines()[-1])  # after the command's help
    assert answer["paused"] and answer["enabled"]
    assert answer["frozen"] > 50_000  # a service's modules, classes and functions
    assert answer["called"] == 0  # main(argv) from a test freezes nothing of the caller's
