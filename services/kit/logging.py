"""Structured JSON logs (structlog), one line per event, with the request id bound.

The request id arrives in ``x-request-id`` metadata (Envoy sets one), is bound
to the log context for the duration of an RPC, and travels on in outgoing
events' headers, so one id follows a request across services.
"""

from __future__ import annotations

import logging
import sys
import uuid
from contextvars import ContextVar

import structlog

_request_id: ContextVar[str | None] = ContextVar("tavla_request_id", default=None)


def configure(service: str, level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    logging.basicConfig(stream=sys.stderr, level=numeric, format="%(message)s")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
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
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return _request_id.get()


def bind_request_id(request_id: str) -> None:
    """Bind for the current task: every log line and outgoing event carries it."""
    _request_id.set(request_id)
    structlog.contextvars.bind_contextvars(request_id=request_id)
