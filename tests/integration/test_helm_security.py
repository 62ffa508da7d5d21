"""The chart's hardening: TLS and NetworkPolicy render valid manifests, every pod runs with seccomp
RuntimeDefault and gets only the Secrets it uses, the HS256 signing key is one shared Secret, and the
configuration each pod is given passes DocQA's own validation with only that pod's Secrets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from service.config import load_settings
from tests.env import clear_docqa_env
from tests.integration.helm_render import (
    MINIMAL,
    assert_valid,
    helm,
    merged,
    objects,
    pod_spec,
    production_values,
    render,
)
from tests.pki import Authority

#: The production example (TLS with client certificates for gRPC, NetworkPolicies, a metrics token) with
#: watsonx.ai narrowed to one address block.
HARDENED: dict[str, Any] = {
    "networkPolicy": {
        "clientsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "cms"}}}],
        "egress": {"watsonx": {"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}], "ports": [{"port": 443}]}},
    },
}
PODS = ("Deployment/docqa", "CronJob/docqa-indexer", "Job/docqa-migrate")


def _hardened() -> dict[str, dict[str, Any]]:
    return objects(render(merged(production_values(), HARDENED)))


def _secrets_of(pod: dict[str, Any]) -> set[str]:
    """Every Secret a pod can read: environment references and mounted volumes."""
    names = {
        env["valueFrom"]["secretKeyRef"]["name"]
        for container in pod["containers"]
        for env in container.get("env", [])
        if "secretKeyRef" in env.get("valueFrom", {})
    }
    return names | {volume["secret"]["secretName"] for volume in pod.get("volumes", []) if "secret" in volume}


def test_tls_and_network_policy_render_valid_manifests() -> None:
    rendered = _hardened()
    assert_valid(rendered)
    config = rendered["ConfigMap/docqa"]["data"]["docqa.yaml"]
    for line in (
        "cert_file: /etc/docqa/tls/tls.crt",
        "key_file: /etc/docqa/tls/tls.key",
        "client_ca_file: /etc/docqa/client-ca/ca.crt",
        "client_auth: grpc",
    ):
        assert line in config
    ports = {p["name"]: p for p in rendered["Service/docqa"]["spec"]["ports"]}
    assert ports["http"]["appProtocol"] == "https" and ports["metrics"]["port"] == 9090
    assert rendered["Service/docqa"]["spec"]["selector"]["app.kubernetes.io/component"] == "server"

    server = rendered["NetworkPolicy/docqa"]["spec"]
    assert server["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "server"
    calls, scrapes = server["ingress"]
    assert calls["from"] == HARDENED["networkPolicy"]["clientsFrom"]
    assert {p["port"] for p in calls["ports"]} == {"grpc", "http"}
    assert scrapes["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    assert [p["port"] for p in scrapes["ports"]] == ["metrics"]
    egress_ports = {p["port"] for rule in server["egress"] for p in rule["ports"]}
    assert egress_ports == {53, 5432, 9200, 443, 6379}  # 6379: the shared rate-limit store
    assert {"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}], "ports": [{"port": 443}]} in server["egress"]

    jobs = rendered["NetworkPolicy/docqa-jobs"]["spec"]
    assert jobs["ingress"] == [] and {p["port"] for rule in jobs["egress"] for p in rule["ports"]} == {53, 5432, 9200}


def test_every_pod_runs_with_seccomp_and_only_the_secrets_it_uses() -> None:
    rendered = _hardened()
    for name in PODS:
        assert pod_spec(rendered[name])["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
    assert _secrets_of(pod_spec(rendered["Deployment/docqa"])) == {
        "docqa-database",
        "docqa-watsonx",
        "docqa-opensearch",
        "docqa-jwt",
        "docqa-tls",
        "docqa-plugins-ca",
        "docqa-metrics",
        "docqa-rate-limit",
    }
    assert _secrets_of(pod_spec(rendered["CronJob/docqa-indexer"])) == {"docqa-database", "docqa-opensearch"}
    assert _secrets_of(pod_spec(rendered["Job/docqa-migrate"])) == {"docqa-database"}
    # Nor a Kubernetes API token: not the migration Job (the namespace's default service account), not a pod
    # whose service account the chart does not create.
    for values in (merged(production_values(), HARDENED), merged(MINIMAL, {"serviceAccount": {"create": False}})):
        with_account = objects(
            render(merged(values, {"secrets": {"database": {"existingSecret": "db"}}, "indexer": {"enabled": True}}))
        )
        for name in PODS:
            assert pod_spec(with_account[name])["automountServiceAccountToken"] is False, name
    # A pod security context without a profile still gets RuntimeDefault; Unconfined is refused.
    bare = objects(render(merged(MINIMAL, {"podSecurityContext": {"seccompProfile": None}})))
    assert pod_spec(bare["Deployment/docqa"])["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    with pytest.raises(helm.HelmValuesError, match="seccompProfile"):
        render(merged(MINIMAL, {"podSecurityContext": {"seccompProfile": {"type": "Unconfined"}}}))


def test_hs256_needs_one_signing_secret_shared_by_every_replica() -> None:
    unsigned = merged(MINIMAL, {"replicaCount": 3})
    del unsigned["secrets"]
    with pytest.raises(helm.HelmRenderError, match=r"set secrets\.jwtSigning\.existingSecret"):
        render(unsigned)
    rendered = objects(render(merged(MINIMAL, {"replicaCount": 3})))
    assert "Secret" not in {o["kind"] for o in rendered.values()}  # nothing generated per release or per pod
    pod = pod_spec(rendered["Deployment/docqa"])
    assert rendered["Deployment/docqa"]["spec"]["replicas"] == 3
    assert _secrets_of(pod) == {"docqa-jwt-signing"}
    assert "hs256_secret_file: /etc/docqa/jwt-signing/hs256-secret" in rendered["ConfigMap/docqa"]["data"]["docqa.yaml"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"config": {"auth": {"audience": None}}}, r"config\.auth\.issuer and config\.auth\.audience are required"),
        ({"tls": {"enabled": True}}, r"tls\.enabled needs tls\.existingSecret"),
        ({"tls": {"enabled": True, "existingSecret": "t", "clientAuth": "all"}}, r"needs tls\.clientCA"),
        ({"tls": {"clientAuth": "grpc"}}, r"need tls\.enabled"),
        ({"config": {"server": {"tls": {"cert_file": "/x"}}}}, r"config\.server\.tls is set by the chart"),
        ({"config": {"auth": {"rs256_public_key_file": "/etc/docqa/jwt/k.pem"}}}, "choose one"),
    ],
)
def test_a_release_that_cannot_work_securely_is_refused(values: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render(merged(MINIMAL, values))


def _pod_environment(pod: dict[str, Any]) -> dict[str, str]:
    """The pod's environment, each Secret reference given a stand-in value."""
    env: dict[str, str] = {}
    for item in pod["containers"][0]["env"]:
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            env[item["name"]] = {
                "DOCQA_DATABASE_URL": "postgresql+psycopg://docqa:pw@postgres/docqa",
                "DOCQA_SERVER__METRICS_TOKEN": "m" * 32,
                "DOCQA_LIMITS__RATE__STORAGE_URI": "redis://:pw@redis-master.redis.svc:6379/0",
            }.get(item["name"], "stand-in")
    return env


def test_each_pod_configuration_loads_with_only_its_own_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pod's file, with only the Secrets (files and variables) that pod gets, passes DocQA's validation."""
    rendered = _hardened()
    etc = tmp_path / "etc"  # stands for /etc/docqa: the mounted files
    ca = Authority.create(tmp_path / "pki", "ca")
    served = ca.server()
    for path, content in {
        "tls/tls.crt": served.cert.read_bytes(),
        "tls/tls.key": served.key.read_bytes(),
        "client-ca/ca.crt": ca.cert.read_bytes(),
        "jwt/public.pem": b"-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n",
    }.items():
        (etc / path).parent.mkdir(parents=True, exist_ok=True)
        (etc / path).write_bytes(content)
    files = {
        "Deployment/docqa": rendered["ConfigMap/docqa"]["data"]["docqa.yaml"],
        "CronJob/docqa-indexer": rendered["ConfigMap/docqa"]["data"]["jobs.yaml"],
        "Job/docqa-migrate": rendered["ConfigMap/docqa-migrate"]["data"]["docqa.yaml"],
    }
    for name in PODS:
        clear_docqa_env(monkeypatch)
        env = _pod_environment(pod_spec(rendered[name]))
        config = tmp_path / f"{name.replace('/', '-')}.yaml"
        config.write_text(files[name].replace("/etc/docqa/", f"{etc}/"))
        assert env["DOCQA_CONFIG"].startswith("/etc/docqa/config/")
        for key, value in env.items():
            if key.startswith("DOCQA_") and key != "DOCQA_CONFIG":
                monkeypatch.setenv(key, value)
        settings = load_settings(config)
        if name == "Deployment/docqa":
            assert settings.server.tls.client_auth == "grpc" and settings.generator.backend == "watsonx"
            assert settings.server.metrics_token is not None and settings.rerank.kind == "watsonx"
            assert settings.limits.rate.shared and settings.limits.rate.grpc.enabled  # one budget across replicas
        else:
            assert settings.generator.backend == "extractive" and not settings.server.tls.enabled
            assert settings.rerank.kind == "offline"  # jobs never rerank, so they need no watsonx key
            assert settings.index.backend == "opensearch"
