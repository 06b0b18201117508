"""Credentials for tests, made once per test process: one place for every test's identity.

- A player signing key: ``as_player(account_id)`` is metadata carrying an access
  token it signs (the accounts services under test sign with the same key, and
  services started by :func:`tests.support.services.start_service` verify with
  it unless a test makes them fetch the accounts service's JWKS).
- A key pair per service (and ``ops``): every service under test gets them as
  ``TAVLA_SERVICE_KEY_FILE`` / ``TAVLA_SERVICE_PUBLIC_KEYS_DIR``, and
  :func:`caller_channel` calls internal methods as the first caller each method
  declares, so tests of what a method does need not say who calls it. Tests of
  who may call use :func:`as_service` and :func:`service_token` explicitly.
- A platform CA with the gateway's client certificate and the services' server
  certificates (``services/kit/devstack/certs.py``): every service under test
  gets a gateway port (:func:`gateway_port_env`), and :func:`caller_channel` given
  that port presents the gateway's certificate, so the client address of
  :func:`as_player` is believed, as it is from the real gateway. A test of what
  a direct caller gets uses the plain port (:func:`bare_channel`).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import grpc
import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from services.geo.devdata import MALTA_IP
from services.kit.authn import access_table
from services.kit.client import OWN_CONNECTIONS
from services.kit.client_signals import CLIENT_ADDRESS_HEADER, DEVICE_ID_HEADER
from services.kit.devstack.certs import PlatformCertificates, ensure_platform_certificates
from services.kit.devstack.keys import ServiceKeys, ensure_service_keys, load_private_key
from services.kit.devstack.net import free_port
from services.kit.keys import PrivateKey, key_id, private_pem
from services.kit.player_tokens import StaticKeys
from services.kit.ports import SERVICES
from services.kit.service_tokens import SERVICE_TOKEN_HEADER, ServiceTokenMinter
from tavla.common.v1 import auth_pb2

# Where a test player lives and calls from unless a test says otherwise (services/geo/devdata.py).
DEFAULT_RESIDENCE = "MT"
DEFAULT_ADDRESS = MALTA_IP

KEYS_DIR = Path(tempfile.mkdtemp(prefix="tavla-test-keys-"))
atexit.register(shutil.rmtree, KEYS_DIR, ignore_errors=True)
SERVICE_KEYS: ServiceKeys = ensure_service_keys(KEYS_DIR, [*SERVICES, "ops"])
PLAYER_KEY_FILE = KEYS_DIR / "jwt-signing.pem"
PLAYER_KEY: PrivateKey = ec.generate_private_key(ec.SECP256R1())
PLAYER_KEY_FILE.write_bytes(private_pem(PLAYER_KEY))
PLAYER_KID = key_id(PLAYER_KEY.public_key())
CERTIFICATES: PlatformCertificates = ensure_platform_certificates(KEYS_DIR, SERVICES)


def service_env(service: str) -> dict[str, str]:
    """The service-key variables for ``service`` (any known service)."""
    return {
        "TAVLA_SERVICE_KEY_FILE": str(SERVICE_KEYS.private_key_file(service)),
        "TAVLA_SERVICE_PUBLIC_KEYS_DIR": str(SERVICE_KEYS.public_keys_dir),
    }


def gateway_port_env(service: str) -> dict[str, str]:
    """The variables of a gateway port (mutual TLS, the test CA) for ``service``, on a free port."""
    return CERTIFICATES.service_env(service, free_port())


def gateway_credentials() -> grpc.ChannelCredentials:
    """TLS presenting the gateway's client certificate, trusting the test CA."""
    return grpc.ssl_channel_credentials(
        CERTIFICATES.ca_file.read_bytes(),
        CERTIFICATES.gateway_key_file.read_bytes(),
        CERTIFICATES.gateway_cert_file.read_bytes(),
    )


def player_keys() -> StaticKeys:
    """The keys services under test verify access tokens with (the test signing key)."""
    return StaticKeys({PLAYER_KID: PLAYER_KEY.public_key()})


def player_token(
    account_id: str,
    *,
    key: PrivateKey = PLAYER_KEY,
    kid: str | None = None,
    ttl_seconds: int = 3600,
    **claims: Any,
) -> str:
    """An access token as the accounts service issues them; ``claims`` override or add."""
    now = int(time.time())
    payload = {
        "iss": "tavla",
        "aud": "tavla-api",
        "sub": account_id,
        "iat": now,
        "exp": now + ttl_seconds,
        "jti": uuid.uuid4().hex,
        **claims,
    }
    headers = {"kid": kid or key_id(key.public_key())}
    return jwt.encode(payload, key, algorithm="ES256", headers=headers)


@cache
def _player_token(account_id: str, residence: str) -> str:
    return player_token(account_id, residence=residence)


def as_player(
    account_id: str,
    *,
    residence: str = DEFAULT_RESIDENCE,
    address: str = DEFAULT_ADDRESS,
    device_id: str = "",
) -> list[tuple[str, str]]:
    """Call metadata for the signed-in player ``account_id`` as the gateway forwards it.

    By default a Malta resident calling from a Malta address (both allowed for
    real money by the geo rules); ``address=""`` sends no client address, as a
    call that did not come through the gateway.
    """
    metadata = [("authorization", f"Bearer {_player_token(account_id, residence)}")]
    if address:
        metadata.append((CLIENT_ADDRESS_HEADER, address))
    if device_id:
        metadata.append((DEVICE_ID_HEADER, device_id))
    return metadata


@cache
def minter(service: str) -> ServiceTokenMinter:
    key = load_private_key(SERVICE_KEYS.private_key_file(service))
    return ServiceTokenMinter(service, key)


def service_token(caller: str, target: str) -> str:
    return minter(caller).token(target)


def as_service(caller: str, target: str) -> list[tuple[str, str]]:
    """Call metadata for service ``caller`` calling service ``target``."""
    return [(SERVICE_TOKEN_HEADER, service_token(caller, target))]


@cache
def _declared_caller(method: str) -> str | None:
    """The first service a method declares among its callers (None if not internal)."""
    service_name = method.split("/")[1]
    access = access_table([service_name]).get(method)
    if access is None or access.kind != auth_pb2.ACCESS_SERVICE or not access.callers:
        return None
    return sorted(access.callers)[0]


class _AsDeclaredCaller(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, target: str) -> None:
        self._target = target

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        method = details.method if isinstance(details.method, str) else details.method.decode()
        caller = _declared_caller(method) if method.startswith("/tavla.") else None
        metadata = list(details.metadata or ())
        # A test that sends a credential of its own (a player's, a service's) gets just that.
        if caller is not None and not any(
            k in (SERVICE_TOKEN_HEADER, "authorization") for k, _ in metadata
        ):
            metadata += as_service(caller, self._target)
        return await continuation(
            grpc.aio.ClientCallDetails(
                method=details.method,
                timeout=details.timeout,
                metadata=grpc.aio.Metadata(*metadata),
                credentials=details.credentials,
                wait_for_ready=details.wait_for_ready,
            ),
            request,
        )


def caller_channel(address: str, target: str, *, gateway: bool = False) -> grpc.aio.Channel:
    """A channel to ``target`` that calls each internal method as a caller it declares.

    Player methods go out with whatever metadata the test gives (``as_player``).
    ``gateway``: ``address`` is the service's gateway port and the channel presents the
    gateway's certificate there, so the client address and device id are believed.
    """
    interceptors = [_AsDeclaredCaller(target)]
    if gateway:
        return grpc.aio.secure_channel(address, gateway_credentials(), options=[OWN_CONNECTIONS],
                                       interceptors=interceptors)
    return grpc.aio.insecure_channel(address, options=[OWN_CONNECTIONS], interceptors=interceptors)


def bare_channel(address: str) -> grpc.aio.Channel:
    """A channel that adds no credential: for tests of refusals."""
    return grpc.aio.insecure_channel(address, options=[OWN_CONNECTIONS])
