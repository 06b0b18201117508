"""Importing a library without an optional extra it loads only when installed.

Some libraries import a heavy optional package at their own import whenever it is
installed, for features the platform never uses (console tracebacks, syntax-highlighted
HTML error pages). The dev tools install those packages into the same environment, so
every process the tests start paid for them: a tenth of a second of CPU each, and the
suite starts a few hundred (docs/testing.md).
"""

from __future__ import annotations

import importlib
import sys


def import_without(module: str, hidden: str) -> None:
    """Import ``module`` with ``hidden`` unimportable for that one import, so the library
    takes its fallback. A later ``import hidden`` works as usual; if either is already
    imported, nothing changes."""
    if module in sys.modules or hidden in sys.modules:
        return
    sys.modules[hidden] = None  # type: ignore[assignment]  # makes `import hidden` fail at once
    try:
        importlib.import_module(module)
    finally:
        del sys.modules[hidden]
