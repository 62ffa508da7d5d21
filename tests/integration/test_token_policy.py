"""Tokens from a real identity provider's key (RS256, made here), through real gRPC and GraphQL servers on loopback.

A token the same provider issued to another application — even one with the
admin role — is refused, as are tokens without ``aud``/``iss``, living too long,
with claims of the wrong type, or naming the identity unauthenticated callers
are served as. Each refusal is UNAUTHENTICATED and changes nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from service.api.grpc.stubs import Stubs, load
from tests.integration.server_world import QUESTION, STORE, SlowGenerator, build_world, on_servers

ISS, AUD = "https://login.idp.test/", "docqa"
IDP_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
SET_LEVEL = "mutation($s: String!, $l: Float!) { setRelevancyLevel(storeId: $s, level: $l) { level } }"
ASK = "query($s: String!, $q: String!) { vectorQuery(storeId: $s, question: $q, level: 0) { chunks { documentId } } }"


def issued(*, drop: tuple[str, ...] = (), key: Any = IDP_KEY, **claims: Any) -> str:
    """A token as the identity provider signs it (RS256), with ``claims`` changed and ``drop`` left out."""
    now = int(time.time())
    body = {"sub": "alice", "iat": now, "exp": now + 300, "iss": ISS, "aud": AUD, **claims}
    return jwt.encode({k: v for k, v in body.items() if k not in drop}, key, algorithm="RS256")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[grpc.Channel, str]]:
    data = tmp_path_factory.mktemp("tokens")
    pem = data / "idp-public.pem"
    pem.write_bytes(
        IDP_KEY.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    # RS256 keys only, as in production; unauthenticated calls allowed, to show they stay apart from tokens.
    app = build_world(
        Path(data),
        generator=SlowGenerator(),
        hs256_secret=None,
        rs256_public_key_file=pem,
        issuer=ISS,
        audience=AUD,
        allow_unauthenticated=True,
    )
    with on_servers(app) as served:
        channel = grpc.insecure_channel(served.channel_target)
        yield channel, served.graphql_url
        channel.close()
    app.close()


@pytest.fixture(scope="module")
def stubs() -> Stubs:
    return load()


def graphql(url: str, query: str, variables: dict[str, Any], token: str | None) -> dict[str, Any]:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    reply = httpx.post(url, json={"query": query, "variables": variables}, headers=headers, timeout=10)
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


def store_level(channel: grpc.Channel, stubs: Stubs) -> float:
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    metadata = (("authorization", f"Bearer {issued(roles=['docqa-admin'])}"),)
    reply = admin.GetStoreSettings(stubs.admin.GetStoreSettingsRequest(store_id=STORE), metadata=metadata, timeout=10)
    return float(reply.level)


#: Minted when a test runs (not at import): a long suite must not let them expire and be refused for that.
ATTACKS: dict[str, Callable[[], str]] = {
    "issued-to-another-app-with-admin-role": lambda: issued(aud="another-app", roles=["docqa-admin"]),
    "another-issuer": lambda: issued(iss="https://login.elsewhere.test/", roles=["docqa-admin"]),
    "no-audience": lambda: issued(drop=("aud",), roles=["docqa-admin"]),
    "no-issuer": lambda: issued(drop=("iss",), roles=["docqa-admin"]),
    "lives-a-week": lambda: issued(exp=int(time.time()) + 7 * 24 * 3600, roles=["docqa-admin"]),
    "no-issued-at": lambda: issued(drop=("iat",), roles=["docqa-admin"]),
    "string-exp": lambda: issued(exp=str(int(time.time()) + 300), roles=["docqa-admin"]),
    "string-roles": lambda: issued(roles="docqa-admin"),
    "subject-anonymous": lambda: issued(sub="anonymous", roles=["docqa-admin"]),
    "signed-by-another-key": lambda: issued(key=OTHER_KEY, roles=["docqa-admin"]),
}


@pytest.mark.parametrize("make", ATTACKS.values(), ids=ATTACKS.keys())
def test_grpc_refuses_the_token_and_changes_nothing(servers: Any, stubs: Stubs, make: Callable[[], str]) -> None:
    token = make()
    channel, _ = servers
    before = store_level(channel, stubs)
    admin = stubs.admin_grpc.AdminServiceStub(channel)
    request = stubs.admin.SetStoreSettingsRequest(store_id=STORE, level=0.9)
    with pytest.raises(grpc.RpcError) as refused:
        admin.SetStoreSettings(request, metadata=(("authorization", f"Bearer {token}"),), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert store_level(channel, stubs) == before


@pytest.mark.parametrize("make", ATTACKS.values(), ids=ATTACKS.keys())
def test_graphql_refuses_the_token_and_changes_nothing(servers: Any, stubs: Stubs, make: Callable[[], str]) -> None:
    token = make()
    channel, url = servers
    before = store_level(channel, stubs)
    body = graphql(url, SET_LEVEL, {"s": STORE, "l": 0.9}, token)
    assert body["data"] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == ["UNAUTHENTICATED"]
    assert store_level(channel, stubs) == before


def test_the_providers_own_admin_token_is_accepted(servers: Any, stubs: Stubs) -> None:
    """The control: the refusals above are the token's, not the setup's."""
    channel, url = servers
    before = store_level(channel, stubs)
    body = graphql(url, SET_LEVEL, {"s": STORE, "l": before}, issued(roles=["docqa-admin"]))
    assert body.get("errors") is None and body["data"]["setRelevancyLevel"]["level"] == before


def test_groups_in_a_token_are_not_trusted_by_default(servers: Any) -> None:
    _, url = servers
    asserted = graphql(url, ASK, {"s": STORE, "q": QUESTION}, issued(sub="carol", groups=["hr"]))
    carol = graphql(url, ASK, {"s": STORE, "q": QUESTION}, issued(sub="carol"))
    assert {c["documentId"] for c in asserted["data"]["vectorQuery"]["chunks"]} == {"handbook"}
    assert asserted["data"] == carol["data"]


def test_unauthenticated_callers_and_a_token_named_anonymous_stay_apart(servers: Any) -> None:
    _, url = servers
    served = graphql(url, ASK, {"s": STORE, "q": QUESTION}, None)
    assert {c["documentId"] for c in served["data"]["vectorQuery"]["chunks"]} == {"handbook"}
    impostor = graphql(url, ASK, {"s": STORE, "q": QUESTION}, issued(sub="anonymous"))
    assert impostor["data"] is None and impostor["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    assert "reserved" in impostor["errors"][0]["message"]
