"""A process's imports made cheaper: without an optional extra a library loads only when
installed, and without the cyclic garbage collector's passes over them.

Some libraries import a heavy optional package at their own import whenever it is
installed, for features the platform never uses (console tracebacks, syntax-highlighted
HTML error pages). The dev tools install those packages into the same environment, so
every process the tests start paid for them: a tenth of a second of CPU each, and the
suite starts a few hundred (docs/testing.md).
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager


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


@contextmanager
def collector_paused() -> Iterator[None]:
    """Imports with CPython's cyclic garbage collector paused, and what they made frozen
    (``gc.freeze``) out of every later collection.

    A service's imports make over a hundred thousand objects that live as long as the
    process (modules, classes, functions, descriptors) and free few: the collector's
    passes over that growing heap were about a tenth of the imports' CPU, at every start,
    and every later full collection looked at them all again. The few hundred objects
    the imports left as garbage are frozen with the rest rather than collected, as a
    service's ``tune_garbage_collector`` already freezes what its start-up left. Only
    for a process's own program: a test calling in must not have its heap frozen."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
