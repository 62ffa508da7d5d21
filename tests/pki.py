"""A test PKI made in the test: certificate authorities, a server certificate for 127.0.0.1 and localhost, and
client certificates, written as PEM files (cryptography; nothing is fetched)."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A certificate and its key as files (``cert`` may hold the chain)."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Authority:
    """A certificate authority that signs leaf certificates into ``folder``."""

    name: str
    folder: Path
    cert: Path
    _key: ec.EllipticCurvePrivateKey
    _certificate: x509.Certificate

    @classmethod
    def create(cls, folder: Path, name: str) -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        certificate = (
            _builder(subject, subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_key_usage(ca=True), critical=True)
            .add_extension(ski, critical=False)
            .sign(key, hashes.SHA256())
        )
        folder.mkdir(parents=True, exist_ok=True)
        cert = folder / f"{name}.crt"
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return cls(name, folder, cert, key, certificate)

    def server(self, name: str = "server") -> Issued:
        """A server certificate for 127.0.0.1 and localhost."""
        sans = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
        return self._issue(name, ExtendedKeyUsageOID.SERVER_AUTH, sans)

    def client(self, name: str) -> Issued:
        """A client certificate whose common name is ``name``."""
        return self._issue(name, ExtendedKeyUsageOID.CLIENT_AUTH, [x509.DNSName(name)])

    def _issue(self, name: str, usage: x509.ObjectIdentifier, sans: list[x509.GeneralName]) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        issuer_ski = self._certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        certificate = (
            _builder(subject, self._certificate.subject, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(issuer_ski), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        cert, key_file = self.folder / f"{self.name}-{name}.crt", self.folder / f"{self.name}-{name}.key"
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return Issued(cert, key_file)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
    )


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )
