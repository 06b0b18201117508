"""The wallet's listener for the payment provider's signed webhooks.

``POST /v1/payments/webhooks/provider`` on ``TAVLA_WALLET_WEBHOOK_HOST:PORT``
(127.0.0.1:50154 by default). The body is JSON::

    {"event_id": "evt_1", "type": "payment.settled" | "payment.failed",
     "payment_id": "<the wallet's payment id>", "reference": "<provider's reference>",
     "failure_reason": "<for failed>", "occurred_at": "2026-12-01T12:00:00Z",
     "instrument_fingerprint": "<optional: the provider's fingerprint of the card or
                                account, an opaque token, never its number>"}

signed as :mod:`services.wallet.webhook_signature` says. Answers, each with a JSON
``{"status"}`` or ``{"error"}`` a person can act on:

- 200 ``applied`` (the payment moved), ``unchanged`` (it repeated the payment's
  final state) or ``duplicate`` (that event id was already applied);
- 401 a missing or wrong signature, or one outside the replay window;
- 400 a body that is not such an event; 404 a payment the wallet never recorded;
- 409 an event older than one already applied, or contradicting the payment's
  final state ("failed" after "settled"): an operator reconciles it by hand;
- 503 the database is away: the provider retries later;
- 500 this event's payment cannot be applied (a value the database refuses): logged
  (``webhook_failed``, with the payment) and counted (``failed``); the provider
  retries it later while every other payment's webhooks are applied.

Every refusal changes nothing. The provider retries any non-2xx answer, as
providers do; a 2xx tells it to stop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from aiohttp import web
from prometheus_client import Counter
from sqlalchemy.exc import SQLAlchemyError

from services.kit.clock import Clock
from services.kit.logging import get_logger
from services.kit.retry import is_transient
from services.wallet.domain.errors import (
    InvalidInstrumentFingerprint,
    InvalidPaymentTransition,
    OutOfOrderCallback,
    UnknownPayment,
    WalletError,
)
from services.wallet.domain.payments import (
    CallbackOutcome,
    ProviderCallback,
    ProviderEvent,
    instrument_fingerprint,
)
from services.wallet.http_provider import HttpProviderConfig
from services.wallet.payments import EventResult
from services.wallet.webhook_signature import SIGNATURE_HEADER, SignatureRefused, verify

log = get_logger(__name__)

WEBHOOK_PATH = "/v1/payments/webhooks/provider"
MAX_BODY = 64 * 1024
_TYPES = {"payment.settled": CallbackOutcome.CONFIRMED, "payment.failed": CallbackOutcome.FAILED}

WEBHOOKS = Counter(
    "tavla_wallet_webhooks",
    "Provider webhooks received, by answer (applied, unchanged, duplicate, or the refusal).",
    ["outcome"],
)

ApplyEvent = Callable[[ProviderCallback, ProviderEvent], Awaitable[EventResult]]


class MalformedEvent(ValueError):
    """A signed body that is not a webhook event the wallet understands."""


def _text(body: dict[str, Any], name: str, required: bool = True) -> str:
    value = body.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value) or len(value) > 500:
        raise MalformedEvent(f"{name} must be a non-empty string of at most 500 characters")
    return value


def parse_event(raw: bytes) -> tuple[ProviderCallback, ProviderEvent]:
    """The callback and event a webhook body describes, or :class:`MalformedEvent`."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise MalformedEvent("the body is not JSON") from None
    if not isinstance(body, dict):
        raise MalformedEvent("the body must be a JSON object")
    kind = _text(body, "type")
    outcome = _TYPES.get(kind)
    if outcome is None:
        raise MalformedEvent(f"type {kind!r} is not one of {', '.join(sorted(_TYPES))}")
    try:
        occurred_at = datetime.fromisoformat(_text(body, "occurred_at"))
    except ValueError:
        raise MalformedEvent("occurred_at must be an ISO 8601 time with its offset") from None
    if occurred_at.tzinfo is None:
        raise MalformedEvent("occurred_at must carry its UTC offset, e.g. 2026-12-01T12:00:00Z")
    reason = _text(body, "failure_reason", required=False) or None
    try:
        fingerprint = instrument_fingerprint(_text(body, "instrument_fingerprint", required=False))
    except InvalidInstrumentFingerprint as error:
        raise MalformedEvent(str(error)) from None
    callback = ProviderCallback(
        _text(body, "payment_id"),
        outcome,
        _text(body, "reference", required=False),
        reason if outcome is CallbackOutcome.FAILED else None,
        fingerprint if outcome is CallbackOutcome.CONFIRMED else None,
    )
    return callback, ProviderEvent(_text(body, "event_id"), occurred_at)


def _answer(http_status: int, **body: str) -> web.Response:
    return web.json_response(body, status=http_status)


class WebhookHandler:
    """Check the signature on the raw bytes, then apply the event through the service."""

    def __init__(self, apply: ApplyEvent, config: HttpProviderConfig, clock: Clock) -> None:
        self._apply = apply
        self._config = config
        self._clock = clock

    async def handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            verify(
                request.headers.get(SIGNATURE_HEADER),
                raw,
                self._config.webhook_secret,
                self._clock.now(),
                self._config.webhook_tolerance,
            )
            callback, event = parse_event(raw)
        except SignatureRefused as error:
            log.warning("webhook_refused", reason="signature", error=str(error))
            WEBHOOKS.labels("bad_signature").inc()
            return _answer(401, error=str(error))
        except MalformedEvent as error:
            log.warning("webhook_refused", reason="malformed", error=str(error))
            WEBHOOKS.labels("malformed").inc()
            return _answer(400, error=str(error))
        return await self._applied(callback, event)

    async def _applied(self, callback: ProviderCallback, event: ProviderEvent) -> web.Response:
        try:
            result = await self._apply(callback, event)
        except UnknownPayment as error:
            return self._refused(404, event, error)
        except (OutOfOrderCallback, InvalidPaymentTransition) as error:
            return self._refused(409, event, error)
        except WalletError as error:
            return self._refused(422, event, error)
        except (SQLAlchemyError, OSError) as error:
            if not is_transient(error):  # this payment's own (a value the database refuses)
                log.error(
                    "webhook_failed",
                    event_id=event.event_id,
                    payment=callback.payment_id,
                    error=repr(error),
                )
                WEBHOOKS.labels("failed").inc()
                return _answer(500, error="the wallet could not apply this event; retry later")
            log.warning("webhook_deferred", event_id=event.event_id, error=repr(error))
            WEBHOOKS.labels("deferred").inc()
            return _answer(503, error="the wallet cannot reach its database; retry later")
        log.info(
            "webhook_applied",
            event_id=event.event_id,
            payment=callback.payment_id,
            outcome=result.outcome,
        )
        WEBHOOKS.labels(result.outcome).inc()
        return _answer(200, status=result.outcome, payment_status=result.payment.status.value)

    @staticmethod
    def _refused(status: int, event: ProviderEvent, error: WalletError) -> web.Response:
        log.warning(
            "webhook_refused", event_id=event.event_id, reason=error.reason, error=str(error)
        )
        WEBHOOKS.labels(error.reason.lower()).inc()
        return _answer(status, error=str(error), reason=error.reason)


def webhook_app(apply: ApplyEvent, config: HttpProviderConfig, clock: Clock) -> web.Application:
    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_post(WEBHOOK_PATH, WebhookHandler(apply, config, clock).handle)
    return app


async def serve_webhooks(
    apply: ApplyEvent, config: HttpProviderConfig, clock: Clock, retry_seconds: float = 2.0
) -> None:
    """Listen until cancelled (a background task of the service), then close the listener.

    A port still taken (a previous process lingering) is retried rather than given up:
    meanwhile the provider's deliveries fail and it retries them, so nothing is lost.
    """
    runner = web.AppRunner(webhook_app(apply, config, clock), access_log=None)
    await runner.setup()
    try:
        while True:
            try:
                await web.TCPSite(runner, config.webhook_host, config.webhook_port).start()
                break
            except OSError as error:
                log.error("webhooks_cannot_listen", port=config.webhook_port, error=str(error))
                await asyncio.sleep(retry_seconds)
        log.info("webhooks_listening", host=config.webhook_host, port=config.webhook_port)
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
