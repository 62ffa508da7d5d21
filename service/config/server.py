"""Where ``docqa serve`` listens, and the TLS of its ports."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from service.config.base import _Section


class TlsConfig(_Section):
    """TLS of the gRPC port and the HTTP port (one certificate for both); no certificate = plaintext.

    The files are read and checked when the configuration is loaded: a missing or unreadable file, a key that
    does not belong to the certificate, or an encrypted key stops start-up. A renewed certificate is read at the
    next start (``kubectl rollout restart``).
    """

    #: PEM certificate chain of the server, its own certificate first (``tls.crt`` of a kubernetes.io/tls Secret).
    cert_file: Path | None = None
    #: PEM private key of that certificate, unencrypted (``tls.key``).
    key_file: Path | None = None
    #: PEM bundle of the CA(s) that sign client certificates (mutual TLS for content-management plugins).
    client_ca_file: Path | None = None
    #: Who must present a client certificate signed by ``client_ca_file`` to connect at all: ``none``,
    #: ``grpc`` (the gRPC port; HTTP clients are not asked) or ``all`` (gRPC and HTTP). The bearer token
    #: still identifies the caller; the certificate only decides who may connect.
    client_auth: Literal["none", "grpc", "all"] = "none"

    @property
    def enabled(self) -> bool:
        return self.cert_file is not None

    @model_validator(mode="after")
    def _usable(self) -> TlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("client_ca_file needs cert_file and key_file: client certificates are asked for over TLS")
        if (self.client_auth == "none") != (self.client_ca_file is None):
            raise ValueError("client_auth grpc or all needs client_ca_file, and client_ca_file needs one of them")
        if self.cert_file is not None and self.key_file is not None:
            _check_tls_files(self.cert_file, self.key_file, self.client_ca_file)
        return self


def _check_tls_files(cert_file: Path, key_file: Path, client_ca_file: Path | None) -> None:
    """The files exist and can be read, hold what they should, the key belongs to the certificate, the
    certificate has not expired, and OpenSSL accepts them as the servers will load them."""
    import datetime as dt
    import ssl

    from cryptography import x509
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

    def read(key: str, path: Path) -> bytes:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ValueError(f"{key} {path} does not exist") from None
        except OSError as exc:
            raise ValueError(f"{key} {path} cannot be read ({exc.strerror})") from None

    def certificates(key: str, path: Path) -> list[x509.Certificate]:
        pem = read(key, path)
        try:
            return x509.load_pem_x509_certificates(pem)
        except ValueError:
            raise ValueError(f"{key} {path} holds no PEM certificate") from None

    certificate = certificates("cert_file", cert_file)[0]
    key_pem = read("key_file", key_file)
    try:
        private_key = load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise ValueError(f"key_file {key_file} is encrypted; give the server an unencrypted key") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ValueError(f"key_file {key_file} holds no PEM private key") from None
    spki = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    if private_key.public_key().public_bytes(*spki) != certificate.public_key().public_bytes(*spki):
        raise ValueError(f"key_file {key_file} is not the private key of cert_file {cert_file}")
    if certificate.not_valid_after_utc < dt.datetime.now(dt.UTC):
        raise ValueError(f"cert_file {cert_file} expired on {certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")
    if client_ca_file is not None:
        certificates("client_ca_file", client_ca_file)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert_file, key_file, password=lambda: b"")  # never a terminal prompt
        if client_ca_file is not None:
            context.load_verify_locations(cafile=client_ca_file)
    except ssl.SSLError as exc:
        raise ValueError(f"OpenSSL refuses the TLS files ({exc.reason or exc})") from None


class ServerConfig(_Section):
    """Where ``docqa serve`` listens (gRPC and HTTP/GraphQL) and how much it accepts."""

    host: str = "127.0.0.1"
    #: gRPC port; 0 = any free port.
    grpc_port: int = Field(50051, ge=0, le=65535)
    #: HTTP port of the GraphQL app and the health endpoints (and /metrics without metrics_port); 0 = any free port.
    http_port: int = Field(8080, ge=0, le=65535)
    #: Port of the operations listener: /metrics, /healthz, /livez, /readyz in plain HTTP (no caller data, no
    #: client certificate), for probes and Prometheus; http_port then serves no /metrics. None = no such port.
    metrics_port: int | None = Field(None, ge=0, le=65535)
    #: Bearer token that /metrics requires (DOCQA_SERVER__METRICS_TOKEN; a secret, never in the file).
    metrics_token: SecretStr | None = None
    #: TLS of the gRPC and HTTP ports.
    tls: TlsConfig = TlsConfig()
    #: Largest gRPC message (either way) and largest HTTP request body, in bytes.
    max_message_bytes: int = Field(16 * 1024 * 1024, ge=1024, le=1024 * 1024 * 1024)
    #: Threads answering gRPC calls.
    grpc_workers: int = Field(16, ge=1, le=1024)
    #: Threads running GraphQL resolvers (queries, mutations) of one server; concurrent questions beyond
    #: them wait for a thread, and those running at once are what the question batcher can join.
    graphql_workers: int = Field(16, ge=1, le=1024)
    #: Deepest GraphQL query accepted.
    graphql_max_depth: int = Field(8, ge=2, le=64)
    #: Most tokens (a size/complexity bound) in one GraphQL document.
    graphql_max_tokens: int = Field(2000, ge=50, le=100_000)
    #: Most aliases in one GraphQL document (bounds fan-out).
    graphql_max_aliases: int = Field(15, ge=1, le=1000)
    #: Reverse proxies in front of the HTTP port, trusted to name the client (X-Forwarded-For, -Proto): IP
    #: addresses or networks (``10.0.0.0/8``), or ``*`` for every peer (only when nothing else reaches the
    #: port). Empty (the default): the headers are ignored and a caller is known by its connection's address,
    #: which the per-address rate limit keys on.
    forwarded_allow_ips: tuple[str, ...] = ()
    #: SCIM 2.0 provisioning at /scim/v2 on the HTTP port (users and groups from an identity provider); every
    #: request needs a token issued with ``docqa scim token``, so it is closed until an admin issues one.
    scim: bool = True

    @field_validator("forwarded_allow_ips", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):  # "10.0.0.1, 10.0.0.2", as uvicorn's --forwarded-allow-ips takes it
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _proxy_addresses(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address, a network (10.0.0.0/8) or *") from None
        return value

    @field_validator("metrics_token")
    @classmethod
    def _long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value

    @model_validator(mode="after")
    def _distinct_ports(self) -> ServerConfig:
        ports = [p for p in (self.grpc_port, self.http_port, self.metrics_port) if p]
        if len(ports) != len(set(ports)):
            raise ValueError("grpc_port, http_port and metrics_port must differ")
        return self
