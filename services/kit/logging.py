"""Structured JSON logs (structlog), one line per event, with the request id bound.

The request id arrives in ``x-request-id`` metadata (Envoy sets one), is bound
to the log context for the duration of an RPC, and travels on in outgoing
events' headers, so one id follows a request across services. Binding it only
sets a context variable: a processor adds it to the lines actually written, so a
call that writes none pays nothing for it.
"""

from __future__ import annotations

import itertools
import logging
import os
import sys
from contextvars import ContextVar

from services.kit.lean_imports import import_without

# structlog's ``dev`` module, imported by the package, imports rich (and through it
# pygments) whenever rich is installed, for tracebacks drawn on a console; our logs are
# JSON lines.
import_without("structlog", hidden="rich")
import structlog  # noqa: E402

_request_id: ContextVar[str | None] = ContextVar("tavla_request_id", default=None)
_ID_PREFIX = ""
_id_counter = itertools.count()


def _new_id_prefix() -> None:
    """A random prefix of this process's own (again in a forked child)."""
    global _ID_PREFIX, _id_counter
    _ID_PREFIX = os.urandom(8).hex()
    _id_counter = itertools.count(int.from_bytes(os.urandom(4)))


_new_id_prefix()
os.register_at_fork(after_in_child=_new_id_prefix)


def configure(service: str, level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            _add_request_id,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.WriteLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.bind_contextvars(service=service)


def get_logger(name: str) -> structlog.typing.FilteringBoundLogger:
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(name)
    return logger


def new_request_id() -> str:
    """32 hex digits, unique: this process's random prefix and a counter.

    Made for every call that arrives without one (the gateway sends one); a read of
    the system's random source per call was visible in a game move's CPU.
    """
    return f"{_ID_PREFIX}{next(_id_counter):016x}"


def current_request_id() -> str | None:
    return _request_id.get()


def bind_request_id(request_id: str) -> None:
    """Bind for the current task: every log line and outgoing event carries it."""
    _request_id.set(request_id)


def _add_request_id(
    logger: object, method: str, event: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """The processor that puts the bound request id on a line that is written."""
    request_id = _request_id.get()
    if request_id is not None:
        event.setdefault("request_id", request_id)
    return event
