"""TLS on the gRPC and HTTP ports with client certificates, and /metrics on its own port behind a token: real
servers on 127.0.0.1 and a test PKI made here (a server CA, a plugins' client CA, and a rogue CA)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from acl.model import Acl
from service.access.state import AccessState
from service.api.graphql.context import GraphQLServices
from service.api.grpc.server import GrpcServer, services_for, start_grpc
from service.api.grpc.stubs import Stubs, load
from service.api.http import HttpServer, start_http, start_metrics
from service.bootstrap import App
from service.observability.metrics import Metrics
from tests.integration.server_world import QUESTION, STORE, SlowGenerator, bearer, build_world, token
from tests.pki import Authority, Issued

METRICS_TOKEN = "metrics-token-" + "5f3a9c" * 4
ASK = (
    "query A($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q, level: 0.0) { chunks { documentId } } }"
)


@dataclass
class Pki:
    server_ca: Authority
    plugin: Issued  # signed by the plugins' CA, which the server trusts for client certificates
    rogue_plugin: Issued  # signed by a CA the server does not trust
    stranger_ca: Authority  # a CA that did not sign the server's certificate


@dataclass
class World:
    app: App
    grpc: GrpcServer
    http: HttpServer
    metrics: HttpServer
    pki: Pki
    stubs: Stubs


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("pki")
    server_ca = Authority.create(folder, "server-ca")
    plugins_ca = Authority.create(folder, "plugins-ca")
    pki = Pki(
        server_ca=server_ca,
        plugin=plugins_ca.client("cms-plugin"),
        rogue_plugin=Authority.create(folder, "rogue-ca").client("cms-plugin"),
        stranger_ca=Authority.create(folder, "stranger-ca"),
    )
    served = server_ca.server()
    server = {
        "metrics_port": 0,
        "metrics_token": METRICS_TOKEN,
        "tls": {
            "cert_file": served.cert,
            "key_file": served.key,
            "client_ca_file": plugins_ca.cert,
            "client_auth": "all",
        },
    }
    app = build_world(tmp_path_factory.mktemp("transport"), generator=SlowGenerator(), server=server)
    services = services_for(app, Metrics())
    graphql = GraphQLServices(app, services.authenticator, services.queries, services.metrics)
    grpc_server = start_grpc(services, "127.0.0.1", 0)
    http = start_http(graphql, "127.0.0.1", 0)
    metrics = start_metrics(graphql, "127.0.0.1")
    yield World(app, grpc_server, http, metrics, pki, load())
    metrics.stop()
    http.stop()
    grpc_server.stop(0)
    app.close()


def _ask_grpc(world: World, channel: grpc.Channel, user: str | None = "alice") -> Any:
    service = world.stubs.query_grpc.QueryServiceStub(channel)
    request = world.stubs.query.VectorQueryRequest(store_id=STORE, question=QUESTION, level=0.0)
    return service.VectorQuery(request, metadata=bearer(world.app, user) if user else (), timeout=5)


def _grpc_credentials(ca: Path, client: Issued | None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(),
        private_key=client.key.read_bytes() if client else None,
        certificate_chain=client.cert.read_bytes() if client else None,
    )


def test_grpc_over_tls_admits_only_clients_with_a_trusted_certificate(world: World) -> None:
    target = f"127.0.0.1:{world.grpc.port}"
    pki = world.pki
    with grpc.secure_channel(target, _grpc_credentials(pki.server_ca.cert, pki.plugin)) as channel:
        reply = _ask_grpc(world, channel)
        assert {c.document_id for c in reply.chunks} == {"handbook", "executive-pay"}
        # The certificate lets the plugin connect; the bearer token still says who calls.
        with pytest.raises(grpc.RpcError) as anonymous:
            _ask_grpc(world, channel, user=None)
        assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED

    refused = {
        "no client certificate": grpc.secure_channel(target, _grpc_credentials(pki.server_ca.cert, None)),
        "a certificate of another CA": grpc.secure_channel(
            target, _grpc_credentials(pki.server_ca.cert, pki.rogue_plugin)
        ),
        "a client that does not trust the server's CA": grpc.secure_channel(
            target, _grpc_credentials(pki.stranger_ca.cert, pki.plugin)
        ),
        "plaintext": grpc.insecure_channel(target),
    }
    for why, channel in refused.items():
        with channel, pytest.raises(grpc.RpcError) as failed:
            _ask_grpc(world, channel)
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE, why


def _https(ca: Path, client: Issued | None) -> httpx.Client:
    context = ssl.create_default_context(cafile=str(ca))
    if client is not None:
        context.load_cert_chain(client.cert, client.key)
    return httpx.Client(verify=context, timeout=5)


def test_http_over_tls_admits_only_clients_with_a_trusted_certificate(world: World) -> None:
    pki = world.pki
    base = f"https://127.0.0.1:{world.http.port}"
    query = {"query": ASK, "variables": {"s": STORE, "q": QUESTION}}
    bob = {"authorization": f"Bearer {token(world.app, 'bob')}"}
    with _https(pki.server_ca.cert, pki.plugin) as client:
        reply = client.post(f"{base}/graphql", json=query, headers=bob)
        assert reply.status_code == 200, reply.text
        chunks = reply.json()["data"]["vectorQuery"]["chunks"]
        assert {c["documentId"] for c in chunks} == {"handbook", "bob-notes"}
        assert client.get(f"{base}/readyz").json() == {"status": "ready"}
        assert client.get(f"{base}/metrics").status_code == 404  # metrics live on their own port

    for why, client in {
        "no client certificate": _https(pki.server_ca.cert, None),
        "a certificate of another CA": _https(pki.server_ca.cert, pki.rogue_plugin),
        "a client that does not trust the server's CA": _https(pki.stranger_ca.cert, pki.plugin),
        "plaintext": httpx.Client(timeout=5),
    }.items():
        url = base.replace("https://", "http://") if why == "plaintext" else base
        with client, pytest.raises(httpx.TransportError):
            client.post(f"{url}/graphql", json=query, headers=bob)
            pytest.fail(f"{why}: the request went through")


def test_metrics_port_wants_its_token_and_counts_nothing_a_caller_could_not_read(world: World) -> None:
    metrics = f"http://127.0.0.1:{world.metrics.port}/metrics"
    assert httpx.get(metrics, timeout=5).status_code == 401
    assert httpx.get(metrics, headers={"authorization": "Bearer wrong"}, timeout=5).status_code == 401
    assert httpx.get(f"http://127.0.0.1:{world.metrics.port}/readyz", timeout=5).json() == {"status": "ready"}

    # A revocation not yet in the index: the search finds the handbook, the access check drops its chunks.
    access = AccessState(world.app.repository)
    access.override_acl(STORE, "handbook", Acl.of(["user:zed"]), "test")
    try:
        with grpc.secure_channel(
            f"127.0.0.1:{world.grpc.port}", _grpc_credentials(world.pki.server_ca.cert, world.pki.plugin)
        ) as channel:
            # bob still reads his notes (a store read nothing of would be NOT_FOUND before any search).
            chunks = _ask_grpc(world, channel, user="bob").chunks
            assert {c.document_id for c in chunks} == {"bob-notes"}
    finally:
        access.reset_acl(STORE, "handbook")

    reply = httpx.get(metrics, headers={"authorization": f"Bearer {METRICS_TOKEN}"}, timeout=5)
    assert reply.status_code == 200
    text = reply.text
    assert 'docqa_requests_total{code="OK",interface="grpc",method="VectorQuery"}' in text
    # (prometheus_client also writes a `<name>_created` timestamp beside each family.)
    families = {family.name.removesuffix("_created") for family in text_string_to_metric_families(text)}
    assert families == {
        "docqa_requests",
        "docqa_query_latency_seconds",
        "docqa_llm_latency_seconds",
        "docqa_rate_limit_store_failures",  # calls decided without the shared rate-limit store: no caller's data
    }
    assert "dropped" not in text.lower()
