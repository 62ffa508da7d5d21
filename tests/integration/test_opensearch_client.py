"""The OpenSearch client over real HTTP: SigV4 signatures, the connection pool, API keys, the start-up check.

Each test talks to its own stand-in (tests/opensearch_standin.py) on 127.0.0.1, which records the
requests as they arrived. SigV4 signatures are checked by recomputing them from what the server
received, with AWS's published algorithm written out here (not botocore's code, which signed them).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import hmac
import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

import pytest

from acl.errors import ConfigurationError
from indexer.errors import IndexUnavailable
from indexer.index.filters import acl_filter
from indexer.index.opensearch.client import AwsSigV4, check_server, connect
from indexer.index.opensearch.index import OpenSearchOptions
from tests.env import AWS_ACCESS_KEY, AWS_SECRET_KEY, isolate_aws_env
from tests.opensearch_standin import OpenSearchStandIn, Seen

SESSION_TOKEN = "session-token-of-an-assumed-role"


def sigv4_parts(seen: Seen, secret_key: str) -> dict[str, str]:
    """The parts of the request's ``Authorization`` header, once its signature is shown to be right for the
    method, path, query, signed headers and body the server received (AssertionError otherwise)."""
    algorithm, _, rest = seen.headers["authorization"].partition(" ")
    assert algorithm == "AWS4-HMAC-SHA256"
    parts = dict(item.strip().split("=", 1) for item in rest.split(","))
    _, date, region, service, terminator = parts["Credential"].split("/")
    assert terminator == "aws4_request"
    signed = parts["SignedHeaders"].split(";")
    query = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in parse_qsl(seen.query, True))
    canonical_request = "\n".join(
        [
            seen.method,
            quote(seen.path, safe="/-_.~"),
            "&".join(f"{k}={v}" for k, v in query),
            "".join(f"{name}:{' '.join(seen.headers[name].split())}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(seen.body).hexdigest(),
        ]
    )
    string_to_sign = "\n".join(
        [
            algorithm,
            seen.headers["x-amz-date"],
            f"{date}/{region}/{service}/aws4_request",
            hashlib.sha256(canonical_request.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{secret_key}".encode()
    for scope in (date, region, service, "aws4_request"):
        key = hmac.new(key, scope.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, parts["Signature"]), "the signature does not match the request received"
    return parts


@pytest.mark.parametrize("service", ["es", "aoss"])
def test_sigv4_signs_every_request_for_its_service(
    service: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    isolate_aws_env(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)
    with OpenSearchStandIn() as standin:
        index = connect(standin.url, aws=AwsSigV4("eu-west-1", service))  # type: ignore[arg-type]
        try:
            index.ping()
            index.count("acme", acl_filter(["user:alice"]))
            index.count("acme", acl_filter(["user:bob"]))
        finally:
            index.close()
    ping, alice, bob = standin.seen
    assert (ping.method, ping.path, alice.path) == ("GET", "/", "/docqa-acme/_count")
    for seen in standin.seen:
        parts = sigv4_parts(seen, AWS_SECRET_KEY)
        assert parts["Credential"].startswith(f"{AWS_ACCESS_KEY}/")
        assert parts["Credential"].endswith(f"/eu-west-1/{service}/aws4_request")
        signed = set(parts["SignedHeaders"].split(";"))
        assert {"host", "x-amz-date", "x-amz-content-sha256", "x-amz-security-token"} <= signed
        # Serverless needs the payload hash as a header; it is the hash of the body that arrived.
        assert seen.headers["x-amz-content-sha256"] == hashlib.sha256(seen.body).hexdigest()
        assert seen.headers["x-amz-security-token"] == SESSION_TOKEN
        assert AWS_SECRET_KEY not in repr(seen.headers)
    # The signature covers the body: another body, another signature, and a swapped body fails the check.
    assert alice.body != bob.body
    assert alice.headers["authorization"] != bob.headers["authorization"]
    with pytest.raises(AssertionError, match="does not match"):
        sigv4_parts(dataclasses.replace(alice, body=bob.body), AWS_SECRET_KEY)


@pytest.mark.parametrize(("pool_maxsize", "connections"), [(4, 4), (2, 6)])
def test_the_pool_size_reaches_urllib3(pool_maxsize: int, connections: int, caplog: pytest.LogCaptureFixture) -> None:
    """Two rounds of four requests in flight at once: a pool of four keeps and reuses all four connections;
    a pool of two keeps two, so two are dropped and opened again (and urllib3 says so)."""
    with OpenSearchStandIn(barrier=threading.Barrier(4, timeout=10)) as standin:
        index = connect(standin.url, pool_maxsize=pool_maxsize, options=OpenSearchOptions(ping_timeout_s=10))
        try:
            with caplog.at_level(logging.WARNING, logger="urllib3.connectionpool"):
                for _ in range(2):
                    with ThreadPoolExecutor(4) as threads:
                        list(threads.map(lambda _: index.ping(), range(4)))
        finally:
            index.close()
    assert len(standin.seen) == 8
    assert len({seen.client_port for seen in standin.seen}) == connections
    full = [r for r in caplog.records if "Connection pool is full" in r.getMessage()]
    assert bool(full) == (pool_maxsize < 4)


def test_the_configured_pool_size_is_the_one_the_service_uses(tmp_path: Path) -> None:
    from service.bootstrap import build_app
    from service.config import Settings

    with OpenSearchStandIn(barrier=threading.Barrier(4, timeout=10)) as standin:
        opensearch = {"url": standin.url, "pool_maxsize": 2}
        app = build_app(Settings(data_dir=tmp_path, index={"backend": "opensearch", "opensearch": opensearch}))
        try:
            for _ in range(2):
                with ThreadPoolExecutor(4) as threads:
                    list(threads.map(lambda _: app.index.ping(), range(4)))
        finally:
            app.close()
    assert len({seen.client_port for seen in standin.seen}) == 6  # two kept, two dropped and opened again


def test_an_api_key_an_older_server_refuses_is_explained() -> None:
    with OpenSearchStandIn(version="3.6.0", status=401) as standin:
        index = connect(standin.url, api_key="os_example-key")
        try:
            with pytest.raises(ConfigurationError) as refused:
                check_server(index, engine="lucene", api_key_configured=True)
        finally:
            index.close()
    assert "refused our credentials for GET / (HTTP 401)" in refused.value.message
    assert "OpenSearch accepts API keys from 3.7 on" in refused.value.message
    assert [seen.headers["authorization"] for seen in standin.seen] == ["ApiKey os_example-key"]  # not retried


@pytest.mark.parametrize(("version", "accepted"), [("3.6.0", False), ("3.7.0", True)])
def test_an_api_key_is_checked_against_the_servers_version(version: str, accepted: bool) -> None:
    with OpenSearchStandIn(version=version) as standin:
        index = connect(standin.url, api_key="os_example-key")
        try:
            if accepted:
                assert check_server(index, engine="faiss", api_key_configured=True).version == version
            else:
                with pytest.raises(ConfigurationError, match=f"OpenSearch {version} accepts API keys only from 3.7"):
                    check_server(index, engine="faiss", api_key_configured=True)
        finally:
            index.close()
    assert {seen.headers["authorization"] for seen in standin.seen} == {"ApiKey os_example-key"}


def test_an_unreachable_server_is_reported_within_the_ping_timeout() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    index = connect(f"http://127.0.0.1:{port}", options=OpenSearchOptions(backoff_s=5.0))
    started = time.monotonic()
    try:
        with pytest.raises(IndexUnavailable, match="GET / failed after 1 attempt"):
            check_server(index, engine="lucene", api_key_configured=False)
    finally:
        index.close()
    assert time.monotonic() - started < 3.0  # one attempt, no backoff


# -- docqa doctor ------------------------------------------------------------------------------------------


def doctor(tmp_path: Path, capsys: pytest.CaptureFixture[str], **opensearch: Any) -> tuple[int, str]:
    from service.api.cli.doctor import cmd_doctor
    from service.bootstrap import build_app
    from service.config import Settings

    settings = Settings(data_dir=tmp_path, index={"backend": "opensearch", "opensearch": opensearch})
    app = build_app(settings)
    try:
        code = cmd_doctor(argparse.Namespace(), app)
    finally:
        app.close()
    return code, capsys.readouterr().out


def test_doctor_names_an_api_key_the_server_is_too_old_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenSearchStandIn(version="3.6.0") as standin:
        url = standin.url
        code, out = doctor(tmp_path, capsys, url=url, api_key="os_example-key", pool_maxsize=3)
    assert code == 1
    assert f"opensearch at {url} (auth: api key, engine lucene, pool 3)" in out
    assert "opensearch reachable     ok    opensearch 3.6.0" in out
    assert "opensearch version       ok    2.19 or later: supported (engine lucene)" in out
    assert "k-NN plugin              ok    installed" in out
    assert "api key                  FAIL  index.opensearch.api_key is set but OpenSearch 3.6.0 accepts" in out
    assert "os_example-key" not in out


def test_doctor_explains_a_refused_api_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenSearchStandIn(version="3.6.0", status=401) as standin:
        code, out = doctor(tmp_path, capsys, url=standin.url, api_key="os_example-key")
    assert code == 1
    (reachable,) = [line for line in out.splitlines() if line.startswith("opensearch reachable")]
    assert "FAIL" in reachable and "(HTTP 401)" in reachable and "OpenSearch accepts API keys from 3.7 on" in reachable


def test_doctor_on_an_old_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenSearchStandIn(version="2.18.0") as standin:
        code, out = doctor(tmp_path, capsys, url=standin.url, engine="faiss")
    assert code == 1
    assert "opensearch version       FAIL  OpenSearch 2.18.0 is older than 2.19" in out


def test_doctor_with_sigv4_to_serverless_asks_no_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    isolate_aws_env(monkeypatch, tmp_path)
    url = "https://abc123.eu-west-1.aoss.amazonaws.com"
    code, out = doctor(tmp_path, capsys, url=url, aws={"region": "eu-west-1", "service": "aoss"})
    assert code == 0, out  # no store yet, so no request at all
    assert f"opensearch at {url} (auth: aws sigv4 (aoss, eu-west-1), TLS verify on, engine lucene" in out
    assert (
        "opensearch serverless    ok    answers no GET / nor _cat/plugins: version and k-NN plugin not checked" in out
    )
