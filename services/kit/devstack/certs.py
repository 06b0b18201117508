"""Local TLS certificates for the gateway's hop to the services, made once in the run dir.

The platform CA (``tls/ca.pem``) signs two kinds of certificate:

- the gateway's client certificate (``tls/gateway.pem``, common name
  ``tavla-gateway``, client auth only): Envoy presents it to every service, and
  a service believes the client address and device id of a call only when it
  came with this certificate (``services/kit/gateway_tls.py``);
- one server certificate per service (``tls/<service>.pem``, server auth only,
  for ``127.0.0.1`` and ``localhost``): what the service's gateway port presents.

Keys are EC P-256, created 0600. The CA's key stays in the run dir; in a cluster
the operator's CA (cert-manager or their own) plays this part
(``charts/tavla/README.md``).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from services.kit.devstack.keys import ensure_private_key
from services.kit.gateway.settings import UpstreamTls
from services.kit.gateway_tls import GATEWAY_CLIENT_NAME

TLS_DIR = "tls"
LOCAL_NAMES = ("localhost",)
LOCAL_ADDRESSES = ("127.0.0.1",)
CERT_DAYS = 365


@dataclass(frozen=True)
class PlatformCertificates:
    """Where the CA, the gateway's client pair and each service's server pair are."""

    directory: Path

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def ca_key_file(self) -> Path:
        return self.directory / "ca.key.pem"

    def cert_file(self, name: str) -> Path:
        return self.directory / f"{name}.pem"

    def key_file(self, name: str) -> Path:
        return self.directory / f"{name}.key.pem"

    @property
    def gateway_cert_file(self) -> Path:
        return self.cert_file("gateway")

    @property
    def gateway_key_file(self) -> Path:
        return self.key_file("gateway")

    def upstream_tls(self) -> UpstreamTls:
        """What the gateway presents to the services, and trusts them with."""
        return UpstreamTls(cert_file=str(self.gateway_cert_file),
                           key_file=str(self.gateway_key_file), ca_file=str(self.ca_file))

    def service_env(self, service: str, port: int) -> dict[str, str]:
        """The gateway-port variables of ``service`` (``services/kit/gateway_tls.py``)."""
        return {
            "TAVLA_GATEWAY_PORT": str(port),
            "TAVLA_GATEWAY_TLS_CERT_FILE": str(self.cert_file(service)),
            "TAVLA_GATEWAY_TLS_KEY_FILE": str(self.key_file(service)),
            "TAVLA_GATEWAY_CLIENT_CA_FILE": str(self.ca_file),
        }


def ensure_platform_certificates(run_dir: Path, services: Iterable[str]) -> PlatformCertificates:
    """The CA, the gateway's client certificate and a server certificate per service.

    Made on first use and kept; a certificate that is missing, expires within a
    day or was not signed by the current CA is made again.
    """
    certs = PlatformCertificates(run_dir / TLS_DIR)
    certs.directory.mkdir(parents=True, exist_ok=True)
    ca_key = ensure_private_key(certs.ca_key_file)
    ca = _load_valid(certs.ca_file, None)
    if ca is None or ca.public_key() != ca_key.public_key():
        ca = make_ca(ca_key)
        certs.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    _ensure_leaf(certs, "gateway", ca, ca_key, client=True)
    for service in services:
        _ensure_leaf(certs, service, ca, ca_key, client=False)
    return certs


def make_ca(key: ec.EllipticCurvePrivateKey, name: str = "tavla local CA") -> x509.Certificate:
    """A self-signed CA certificate that may sign leaf certificates only."""
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    return (
        _builder(subject, subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(
            digital_signature=False, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        .sign(key, hashes.SHA256())
    )


def make_leaf(
    common_name: str,
    key: ec.EllipticCurvePrivateKey,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    client: bool,
    dns_names: Sequence[str] = LOCAL_NAMES,
    addresses: Sequence[str] = LOCAL_ADDRESSES,
) -> x509.Certificate:
    """A certificate for ``common_name`` signed by ``ca``: client auth only or server auth only."""
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    names: list[x509.GeneralName] = [x509.DNSName(common_name), *map(x509.DNSName, dns_names),
                                     *(x509.IPAddress(ipaddress.ip_address(a)) for a in addresses)]
    return (
        _builder(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]),
                 ca.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )


def _ensure_leaf(certs: PlatformCertificates, name: str, ca: x509.Certificate,
                 ca_key: ec.EllipticCurvePrivateKey, *, client: bool) -> None:
    key = ensure_private_key(certs.key_file(name))
    current = _load_valid(certs.cert_file(name), ca)
    if current is not None and current.public_key() == key.public_key():
        return
    common_name = GATEWAY_CLIENT_NAME if client else name
    leaf = make_leaf(common_name, key, ca, ca_key, client=client)
    certs.cert_file(name).write_bytes(leaf.public_bytes(serialization.Encoding.PEM))


def _load_valid(path: Path, issuer: x509.Certificate | None) -> x509.Certificate | None:
    """The certificate in ``path`` if it is valid for another day (and signed by ``issuer``)."""
    if not path.exists():
        return None
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    if cert.not_valid_after_utc < _now() + datetime.timedelta(days=1):
        return None
    if issuer is not None:
        try:
            cert.verify_directly_issued_by(issuer)
        except (ValueError, TypeError, InvalidSignature):
            return None
    return cert


def _builder(subject: x509.Name, issuer: x509.Name,
             public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = _now()
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CERT_DAYS))
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)
