"""Choosing the payment provider: no default, every bad setting named; webhook event order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from services.kit.config import ConfigError
from services.kit.devstack.dev import DEV_WALLET_PAYMENTS
from services.wallet.domain.errors import OutOfOrderCallback
from services.wallet.domain.payments import ProviderEvent, check_event_order
from services.wallet.provider_config import PaymentSettings
from services.wallet.webhooks import MalformedEvent, parse_event

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def test_there_is_no_default_provider() -> None:
    with pytest.raises(ConfigError, match="TAVLA_WALLET_PAYMENT_PROVIDER is required"):
        PaymentSettings.from_env({})
    with pytest.raises(ConfigError, match="must be one of http, sandbox"):
        PaymentSettings.from_env({"TAVLA_WALLET_PAYMENT_PROVIDER": "fake"})


def test_the_sandbox_allows_real_money_only_when_told_by_name() -> None:
    plain = PaymentSettings.from_env({"TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox"})
    assert plain.sandbox is not None and not plain.sandbox.real_money_unsafe
    loud = PaymentSettings.from_env(
        {
            "TAVLA_WALLET_PAYMENT_PROVIDER": "SANDBOX",
            "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "true",
            "TAVLA_NOT_PRODUCTION": "true",
        }
    )
    assert loud.sandbox is not None and loud.sandbox.real_money_unsafe
    with pytest.raises(ConfigError, match="TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE"):
        PaymentSettings.from_env(
            {
                "TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox",
                "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "maybe",
            }
        )


def test_the_sandbox_takes_real_money_only_in_a_process_told_it_is_not_production() -> None:
    for not_production in ({}, {"TAVLA_NOT_PRODUCTION": "false"}):
        with pytest.raises(ConfigError, match="refused unless TAVLA_NOT_PRODUCTION=true"):
            PaymentSettings.from_env({
                "TAVLA_WALLET_PAYMENT_PROVIDER": "sandbox",
                "TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE": "true",
                **not_production,
            })


def test_tavla_dev_chooses_the_sandbox_and_allows_it_real_money_by_name() -> None:
    chosen = PaymentSettings.from_env(DEV_WALLET_PAYMENTS)
    assert chosen.provider == "sandbox"
    assert chosen.sandbox is not None and chosen.sandbox.real_money_unsafe


def test_the_http_provider_reads_its_secrets_from_files(tmp_path: Path) -> None:
    key, secret = tmp_path / "key", tmp_path / "secret"
    key.write_text("k-123\n")
    secret.write_text("s-456")
    env = {
        "TAVLA_WALLET_PAYMENT_PROVIDER": "http",
        "TAVLA_WALLET_PROVIDER_URL": "https://psp.example/api/",
        "TAVLA_WALLET_PROVIDER_API_KEY_FILE": str(key),
        "TAVLA_WALLET_WEBHOOK_SECRET_FILE": str(secret),
        "TAVLA_WALLET_WEBHOOK_PORT": "8443",
        "TAVLA_WALLET_WEBHOOK_HOST": "0.0.0.0",
    }
    http = PaymentSettings.from_env(env).http
    assert http is not None
    assert (http.base_url, http.api_key, http.webhook_secret) == (
        "https://psp.example/api",
        b"k-123",
        b"s-456",
    )
    assert (http.webhook_host, http.webhook_port) == ("0.0.0.0", 8443)
    assert http.webhook_tolerance == timedelta(minutes=5)
    for url in ("ftp://x", "http://psp.example", "https://", "psp.example"):
        with pytest.raises(ConfigError, match=r"TAVLA_WALLET_PROVIDER_URL=.* must be an https://"):
            PaymentSettings.from_env({**env, "TAVLA_WALLET_PROVIDER_URL": url})
    local = PaymentSettings.from_env({**env, "TAVLA_WALLET_PROVIDER_URL": "http://127.0.0.1:9/"})
    assert local.http is not None and local.http.base_url == "http://127.0.0.1:9"
    secret.write_text("\n")
    with pytest.raises(ConfigError, match=r"TAVLA_WALLET_WEBHOOK_SECRET_FILE=.*empty"):
        PaymentSettings.from_env(env)


def test_an_event_older_than_the_newest_applied_is_out_of_order() -> None:
    event = ProviderEvent("evt-2", T0)
    check_event_order("p", event, None)
    check_event_order("p", event, T0)  # the same moment: not older
    with pytest.raises(OutOfOrderCallback, match="evt-2 about payment p"):
        check_event_order("p", event, T0 + timedelta(microseconds=1))


def test_webhook_bodies_are_parsed_strictly() -> None:
    callback, event = parse_event(
        b'{"event_id": "e1", "type": "payment.failed", "payment_id": "p1", '
        b'"reference": "r1", "failure_reason": "expired", "occurred_at": "2026-12-01T12:00:00Z"}'
    )
    assert (callback.payment_id, callback.outcome.value, callback.failure_reason) == (
        "p1",
        "failed",
        "expired",
    )
    assert event == ProviderEvent("e1", T0)
    for body, words in [
        (b"[]", "JSON object"),
        (b"nope", "not JSON"),
        (b'{"event_id": "e", "type": "payment.settled", "payment_id": "p"}', "occurred_at"),
        (
            b'{"event_id": "e", "type": "payment.settled", "payment_id": "p", '
            b'"occurred_at": "2026-12-01T12:00:00"}',
            "UTC offset",
        ),
        (
            b'{"event_id": "", "type": "payment.settled", "payment_id": "p", '
            b'"occurred_at": "2026-12-01T12:00:00Z"}',
            "event_id",
        ),
    ]:
        with pytest.raises(MalformedEvent, match=words):
            parse_event(body)
