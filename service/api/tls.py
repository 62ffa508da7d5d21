"""TLS of the servers, from ``server.tls``: gRPC server credentials and uvicorn's TLS options.

One certificate serves both ports. With ``client_auth`` set, the port(s) it names accept only clients that
present a certificate signed by ``client_ca_file``; the handshake fails for any other, before a request is read.
"""

from __future__ import annotations

import ssl
from typing import Any

import grpc

from service.config import TlsConfig

#: Forward-secret AEAD suites for TLS 1.2 (TLS 1.3's own suites are unaffected); Python's context already
#: refuses anything older than TLS 1.2. uvicorn would otherwise set OpenSSL's broad "TLSv1" list.
_TLS12_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL"


def grpc_server_credentials(tls: TlsConfig) -> grpc.ServerCredentials | None:
    """Credentials for ``add_secure_port``; None when TLS is off."""
    if tls.cert_file is None or tls.key_file is None:
        return None
    pair = (tls.key_file.read_bytes(), tls.cert_file.read_bytes())
    if tls.client_auth in ("grpc", "all") and tls.client_ca_file is not None:
        return grpc.ssl_server_credentials(
            [pair], root_certificates=tls.client_ca_file.read_bytes(), require_client_auth=True
        )
    return grpc.ssl_server_credentials([pair])


def uvicorn_tls_options(tls: TlsConfig) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.Config`` for the HTTP port; empty when TLS is off."""
    if tls.cert_file is None or tls.key_file is None:
        return {}
    options: dict[str, Any] = {
        "ssl_certfile": str(tls.cert_file),
        "ssl_keyfile": str(tls.key_file),
        "ssl_ciphers": _TLS12_CIPHERS,
    }
    if tls.client_auth == "all" and tls.client_ca_file is not None:
        options |= {"ssl_ca_certs": str(tls.client_ca_file), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


def describe(tls: TlsConfig, port: str) -> str:
    """How a port is protected, for the start-up log line."""
    if not tls.enabled:
        return "plaintext"
    if tls.client_auth == "all" or (tls.client_auth == "grpc" and port == "grpc"):
        return "TLS, client certificate required"
    return "TLS"
