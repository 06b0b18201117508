"""Which payment provider the wallet uses: chosen by configuration, with no default.

``TAVLA_WALLET_PAYMENT_PROVIDER`` is ``http`` (the real adapter,
:mod:`services.wallet.http_provider`) or ``sandbox`` (the test double,
:mod:`services.wallet.provider`). Unset, the wallet refuses to start, naming
the variable: a production process must never fall back to a provider that
confirms every payment. The sandbox moves play money only unless
``TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE=true`` (``tavla dev`` and the tests).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.kit.config import ConfigError, Env
from services.wallet.http_provider import HTTP_PROVIDER, HttpProviderConfig
from services.wallet.provider import SandboxConfig

PROVIDER_VARIABLE = "TAVLA_WALLET_PAYMENT_PROVIDER"
SANDBOX = "sandbox"
CHOICES = (HTTP_PROVIDER, SANDBOX)


@dataclass(frozen=True)
class PaymentSettings:
    """The chosen provider and its settings (exactly one of ``http`` and ``sandbox``)."""

    provider: str
    http: HttpProviderConfig | None = None
    sandbox: SandboxConfig | None = None

    @classmethod
    def sandboxed(cls, config: SandboxConfig) -> PaymentSettings:
        return cls(SANDBOX, sandbox=config)

    @classmethod
    def over_http(cls, config: HttpProviderConfig) -> PaymentSettings:
        return cls(HTTP_PROVIDER, http=config)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PaymentSettings:
        env = Env(environ)
        chosen = (env.optional_text(PROVIDER_VARIABLE) or "").lower()
        if not chosen:
            raise ConfigError(
                f"{PROVIDER_VARIABLE} is required but not set: 'http' for the real payment "
                "provider (with TAVLA_WALLET_PROVIDER_URL, TAVLA_WALLET_PROVIDER_API_KEY_FILE, "
                "TAVLA_WALLET_WEBHOOK_SECRET_FILE), or 'sandbox' for play money only"
            )
        if chosen not in CHOICES:
            raise ConfigError(f"{PROVIDER_VARIABLE}={chosen!r} must be one of {', '.join(CHOICES)}")
        if chosen == SANDBOX:
            return cls.sandboxed(SandboxConfig.from_env(env))
        return cls.over_http(HttpProviderConfig.from_env(env))
