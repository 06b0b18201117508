"""Child processes that die with their parent, even when the parent is SIGKILLed.

No Python-level cleanup runs when a process is killed outright, so a child
asks the kernel (Linux ``PR_SET_PDEATHSIG``) to SIGKILL it when its parent
dies. ``tavla dev``'s supervisor does this for every process it starts, and a
service's own worker processes (the analysis pool) do it for themselves, so a
killed service leaves no worker behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1

# Looked up once at import: a child between fork and exec must not dlopen.
_prctl = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux; elsewhere nothing).

    Safe between fork and exec (it only calls prctl).
    """
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def die_with(parent_pid: int) -> None:
    """:func:`die_with_parent`, and exit now if ``parent_pid`` already died before we asked."""
    die_with_parent()
    if os.getppid() != parent_pid:
        os._exit(1)
