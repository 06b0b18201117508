"""The local platform CA and its certificates (services/kit/devstack/certs.py)."""

from __future__ import annotations

from pathlib import Path

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from services.kit.devstack.certs import ensure_platform_certificates


def _load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _usages(cert: x509.Certificate) -> list[x509.ObjectIdentifier]:
    return list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_the_gateway_gets_a_client_certificate_and_each_service_a_server_one(
    tmp_path: Path,
) -> None:
    certs = ensure_platform_certificates(tmp_path, ["wallet", "game"])
    ca = _load(certs.ca_file)
    gateway = _load(certs.gateway_cert_file)
    gateway.verify_directly_issued_by(ca)
    assert gateway.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "tavla-gateway"
    assert _usages(gateway) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    for service in ("wallet", "game"):
        server = _load(certs.cert_file(service))
        server.verify_directly_issued_by(ca)
        assert _usages(server) == [ExtendedKeyUsageOID.SERVER_AUTH]
        names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert "127.0.0.1" in [str(a) for a in names.get_values_for_type(x509.IPAddress)]
    for key in (certs.ca_key_file, certs.gateway_key_file, certs.key_file("wallet")):
        assert key.stat().st_mode & 0o777 == 0o600


def test_certificates_are_kept_and_remade_when_their_ca_changes(tmp_path: Path) -> None:
    certs = ensure_platform_certificates(tmp_path, ["wallet"])
    first = certs.cert_file("wallet").read_bytes()
    ensure_platform_certificates(tmp_path, ["wallet"])
    assert certs.cert_file("wallet").read_bytes() == first  # kept across restarts
    certs.ca_key_file.unlink()
    certs.ca_file.unlink()  # a new CA: every certificate it did not sign is made again
    ensure_platform_certificates(tmp_path, ["wallet"])
    _load(certs.cert_file("wallet")).verify_directly_issued_by(_load(certs.ca_file))
    assert certs.cert_file("wallet").read_bytes() != first
