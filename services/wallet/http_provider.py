"""The real payment-provider adapter: a small JSON-over-HTTPS API, and its settings.

The API a provider (or the operator's payment gateway in front of one) offers
the wallet; every request carries ``Authorization: Bearer <API key>``:

- ``POST /v1/payments`` with ``{"payment_id", "kind": "deposit"|"withdrawal",
  "player_id", "amount": {"minor_units", "currency"}, "method"}`` and the
  header ``Idempotency-Key: <payment_id>``; answers ``{"reference",
  "redirect_url"}``. The outcome comes later as a signed webhook
  (:mod:`services.wallet.webhooks`).
- ``GET /v1/payments/<payment_id>`` answers ``{"payment_id", "status":
  "pending"|"settled"|"failed", "reference", "failure_reason",
  "instrument_fingerprint"}`` (the last optional: the card's or account's
  fingerprint, an opaque token, never its number), or 404 when
  the provider never received it: what ``tavla wallet reconcile`` asks.
- ``POST /v1/payout-destinations:verify`` with ``{"player_id", "method"}``
  answers ``{"verified": true|false}``: whether the provider verified that
  payout destination for that player. Only this decides a withdrawal.

A provider that does not answer (or answers nonsense, or 5xx) makes the call fail
with UNAVAILABLE; the player retries with the same idempotency key, and the
provider's own idempotency on ``payment_id`` makes the retry harmless. A provider
that refuses (4xx, e.g. a card it will not take) makes it FAILED_PRECONDITION with
the provider's reason; the recorded payment stays pending until reconciliation
fails it (a withdrawal's money then goes back).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from services.kit.config import ConfigError, Env
from services.kit.errors import FailedPrecondition, Unavailable
from services.wallet.domain.errors import CurrencyNotSupported, InvalidInstrumentFingerprint
from services.wallet.domain.money import PLAY
from services.wallet.domain.payments import (
    CallbackOutcome,
    Payment,
    ProviderCallback,
    instrument_fingerprint,
)
from services.wallet.provider import Submission, WaitingPayment
from services.wallet.webhook_signature import DEFAULT_TOLERANCE

if TYPE_CHECKING:  # imported where a client is made: a sandbox wallet never loads aiohttp
    import aiohttp

HTTP_PROVIDER = "http"
UNKNOWN_TO_PROVIDER = "the payment provider has no record of this payment; it never started"


def read_secret(env: Env, name: str) -> bytes:
    """The content of the file a variable names (a mounted Secret), stripped; never empty."""
    path = Path(env.text(name))
    try:
        secret = path.read_bytes().strip()
    except OSError as error:
        raise ConfigError(f"{name}={path}: cannot read the file: {error.strerror}") from None
    if not secret:
        raise ConfigError(f"{name}={path}: the file is empty")
    return secret


def _provider_url(raw: str) -> str:
    """The provider's base URL: HTTPS, since the API key travels with every call; plain
    HTTP only to this machine (a provider double in tests)."""
    url = urlsplit(raw.rstrip("/"))
    if url.scheme == "https" and url.hostname:
        return url.geturl()
    if url.scheme == "http" and url.hostname in ("127.0.0.1", "localhost", "::1"):
        return url.geturl()
    raise ConfigError(
        f"TAVLA_WALLET_PROVIDER_URL={raw!r} must be an https:// URL "
        "(plain http:// only to 127.0.0.1 or localhost)"
    )


@dataclass(frozen=True)
class HttpProviderConfig:
    """Where the provider is, how the wallet proves itself to it, and how it checks webhooks."""

    base_url: str
    api_key: bytes
    webhook_secret: bytes
    webhook_host: str = "127.0.0.1"
    webhook_port: int = 50154
    webhook_tolerance: timedelta = DEFAULT_TOLERANCE
    timeout_seconds: float = 10.0

    @classmethod
    def from_env(cls, env: Env) -> HttpProviderConfig:
        base_url = _provider_url(env.text("TAVLA_WALLET_PROVIDER_URL"))
        return cls(
            base_url=base_url,
            api_key=read_secret(env, "TAVLA_WALLET_PROVIDER_API_KEY_FILE"),
            webhook_secret=read_secret(env, "TAVLA_WALLET_WEBHOOK_SECRET_FILE"),
            webhook_host=env.text("TAVLA_WALLET_WEBHOOK_HOST", "127.0.0.1"),
            webhook_port=env.integer("TAVLA_WALLET_WEBHOOK_PORT", 50154, low=1, high=65535),
            webhook_tolerance=timedelta(
                seconds=env.number(
                    "TAVLA_WALLET_WEBHOOK_TOLERANCE_SECONDS", 300.0, low=1.0, high=3600.0
                )
            ),
            timeout_seconds=env.number(
                "TAVLA_WALLET_PROVIDER_TIMEOUT_SECONDS", 10.0, low=0.1, high=120.0
            ),
        )


_OUTCOMES = {"settled": CallbackOutcome.CONFIRMED, "failed": CallbackOutcome.FAILED}
# Answers that mean "not now" rather than "no": the caller retries later.
_TRANSIENT = frozenset({408, 409, 425, 429})


async def _reason(reply: aiohttp.ClientResponse) -> str:
    """The provider's ``{"error": ...}`` if it sent one, else its status line."""
    try:
        answer = await reply.json(content_type=None)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        return str(answer["error"])[:300]
    return f"{reply.status} {reply.reason or ''}".strip()


class HttpProvider:
    """The wallet's client of the provider API above."""

    name = HTTP_PROVIDER

    def __init__(self, config: HttpProviderConfig) -> None:
        self.config = config
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        # Made on first use, inside the running event loop aiohttp needs.
        import aiohttp  # a third of a second of imports, for this provider alone

        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                base_url=self.config.base_url + "/",
                headers={"Authorization": f"Bearer {self.config.api_key.decode()}"},
                timeout=aiohttp.ClientTimeout(total=self.config.timeout_seconds),
            )
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def check_currency(self, currency: str) -> None:
        if currency == PLAY:
            raise CurrencyNotSupported(
                "play money (PLAY) is not bought through the payment provider: "
                "use the free play-money top-up (POST /v1/wallet/play-money:topUp)"
            )

    async def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, **headers: str
    ) -> tuple[int, dict[str, Any]]:
        import aiohttp

        try:
            async with self._client().request(method, path, json=body, headers=headers) as reply:
                if reply.status == 404:
                    return 404, {}
                if 400 <= reply.status < 500 and reply.status not in _TRANSIENT:
                    raise FailedPrecondition(
                        f"the payment provider refused {method} {path}: {await _reason(reply)}"
                    )
                if reply.status >= 300:
                    raise Unavailable(
                        f"the payment provider answered {reply.status} to {method} {path}; "
                        "retry later with the same idempotency key"
                    )
                answer = await reply.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            raise Unavailable(
                f"the payment provider did not answer {method} {path} ({error!r}); "
                "retry later with the same idempotency key"
            ) from None
        if not isinstance(answer, dict):
            raise Unavailable(f"the payment provider's answer to {method} {path} is not an object")
        return reply.status, answer

    async def submit(self, payment: Payment, method: str) -> Submission:
        self.check_currency(payment.amount.currency)
        body = {
            "payment_id": payment.id,
            "kind": payment.kind.value,
            "player_id": payment.player_id,
            "amount": {"minor_units": payment.amount.amount, "currency": payment.amount.currency},
            "method": method,
        }
        status, answer = await self._call(
            "POST", "v1/payments", body, **{"Idempotency-Key": payment.id}
        )
        if status == 404:
            raise Unavailable("the payment provider has no /v1/payments: check its URL")
        return Submission(str(answer.get("reference", "")), str(answer.get("redirect_url", "")))

    async def payout_verified(self, player_id: str, payout_method: str) -> bool:
        status, answer = await self._call(
            "POST",
            "v1/payout-destinations:verify",
            {"player_id": player_id, "method": payout_method},
        )
        return status == 200 and answer.get("verified") is True

    async def status(self, waiting: WaitingPayment) -> ProviderCallback | None:
        payment = waiting.payment
        status, answer = await self._call("GET", f"v1/payments/{payment.id}")
        if status == 404:
            return ProviderCallback(payment.id, CallbackOutcome.FAILED, "", UNKNOWN_TO_PROVIDER)
        outcome = _OUTCOMES.get(str(answer.get("status")))
        if outcome is None:
            return None  # pending, or a state the provider has not finished
        reason = str(answer.get("failure_reason") or "") or None
        fingerprint = _fingerprint(answer) if outcome is CallbackOutcome.CONFIRMED else None
        return ProviderCallback(
            payment.id, outcome, str(answer.get("reference", "")), reason, fingerprint
        )


def _fingerprint(answer: dict[str, Any]) -> str | None:
    raw = answer.get("instrument_fingerprint") or ""
    try:
        return instrument_fingerprint(raw if isinstance(raw, str) else repr(raw))
    except InvalidInstrumentFingerprint as error:
        raise Unavailable(f"the payment provider's answer is not usable: {error}") from None
