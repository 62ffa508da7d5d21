"""server.tls, server.metrics_port and server.metrics_token: checked when the configuration is loaded."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.hazmat.primitives import serialization

from acl.errors import ConfigurationError
from service.api.tls import uvicorn_tls_options
from service.config import load_settings
from tests.pki import Authority

pytestmark = pytest.mark.usefixtures("clean_env")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    ca = Authority.create(tmp_path, "ca")
    server = ca.server()
    other = ca.server("other")
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    encrypted = tmp_path / "encrypted.key"
    key = serialization.load_pem_private_key(server.key.read_bytes(), password=None)
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"passphrase"),
        )
    )
    return {
        "ca": ca.cert,
        "cert": server.cert,
        "key": server.key,
        "other_key": other.key,
        "encrypted_key": encrypted,
        "junk": junk,
    }


def _load(tmp_path: Path, server: dict[str, Any]) -> Any:
    config = tmp_path / "docqa.yaml"
    config.write_text(yaml.safe_dump({"server": server}))
    return load_settings(config)


def test_tls_with_client_certificates_loads(tmp_path: Path, files: dict[str, Path]) -> None:
    tls = {"cert_file": str(files["cert"]), "key_file": str(files["key"]), "client_ca_file": str(files["ca"])}
    settings = _load(tmp_path, {"tls": {**tls, "client_auth": "grpc"}, "metrics_port": 9090})
    assert settings.server.tls.enabled and settings.server.metrics_port == 9090
    # client_auth grpc: the HTTP port asks no client certificate; all: it requires one.
    assert "ssl_cert_reqs" not in uvicorn_tls_options(settings.server.tls)
    settings = _load(tmp_path, {"tls": {**tls, "client_auth": "all"}})
    assert uvicorn_tls_options(settings.server.tls)["ssl_ca_certs"] == str(files["ca"])


BAD: list[tuple[Callable[[dict[str, Path]], dict[str, Any]], str]] = [
    (lambda f: {"tls": {"key_file": str(f["key"])}}, "cert_file and key_file go together"),
    (lambda f: {"tls": {"cert_file": str(f["cert"]), "key_file": "/nonexistent/tls.key"}}, "does not exist"),
    (
        lambda f: {"tls": {"cert_file": str(f["cert"]), "key_file": str(f["other_key"])}},
        "is not the private key of cert_file",
    ),
    (lambda f: {"tls": {"cert_file": str(f["cert"]), "key_file": str(f["encrypted_key"])}}, "is encrypted"),
    (lambda f: {"tls": {"cert_file": str(f["junk"]), "key_file": str(f["key"])}}, "holds no PEM certificate"),
    (
        lambda f: {"tls": {"cert_file": str(f["cert"]), "key_file": str(f["key"]), "client_ca_file": str(f["ca"])}},
        "client_ca_file needs one of them",
    ),
    (
        lambda f: {"tls": {"cert_file": str(f["cert"]), "key_file": str(f["key"]), "client_auth": "grpc"}},
        "client_auth grpc or all needs client_ca_file",
    ),
    (
        lambda f: {
            "tls": {
                "cert_file": str(f["cert"]),
                "key_file": str(f["key"]),
                "client_ca_file": str(f["junk"]),
                "client_auth": "all",
            }
        },
        "client_ca_file .* holds no PEM certificate",
    ),
    (lambda f: {"tls": {"client_auth": "optional"}}, "server.tls.client_auth"),
    (lambda f: {"metrics_port": 8080}, "grpc_port, http_port and metrics_port must differ"),
    (lambda f: {"metrics_token": "a-token-in-the-file"}, "server.metrics_token: .*DOCQA_SERVER__METRICS_TOKEN"),
]


@pytest.mark.parametrize(("server", "message"), BAD)
def test_bad_transport_settings_stop_start_up(
    tmp_path: Path, files: dict[str, Path], server: Callable[[dict[str, Path]], dict[str, Any]], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message) as caught:
        _load(tmp_path, server(files))
    assert "server" in str(caught.value)
    assert "a-token-in-the-file" not in str(caught.value)


def test_a_short_metrics_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQA_SERVER__METRICS_TOKEN", "short")
    with pytest.raises(ConfigurationError, match=re.escape("server.metrics_token")):
        load_settings()
