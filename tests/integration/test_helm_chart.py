"""The Helm chart, rendered by Helm's own template engine (helm-python-sdk, no helm binary, offline)
for the default values and the production example, every manifest validated against Kubernetes' schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from service.config import load_settings
from tests.env import clear_docqa_env
from tests.integration.helm_render import (
    CHART,
    KUBERNETES,
    MINIMAL,
    ROOT,
    assert_valid,
    helm,
    kubernetes_validate,
    merged,
    notes,
    objects,
    production_values,
    render,
)
from tests.pki import Authority


@pytest.fixture(params=["default", "production"])
def values(request: pytest.FixtureRequest) -> dict[str, Any]:
    return MINIMAL if request.param == "default" else production_values()


def test_every_rendered_manifest_is_valid_kubernetes(values: dict[str, Any]) -> None:
    rendered = objects(render(values))
    assert {"Deployment/docqa", "Service/docqa", "ConfigMap/docqa"} <= set(rendered)
    assert_valid(rendered)


def test_production_release_has_every_part() -> None:
    rendered = objects(render(production_values()))
    assert {
        "Deployment/docqa",
        "Service/docqa",
        "ConfigMap/docqa",
        "HorizontalPodAutoscaler/docqa",
        "PodDisruptionBudget/docqa",
        "Job/docqa-migrate",
        "ConfigMap/docqa-migrate",
        "CronJob/docqa-indexer",
        "ServiceAccount/docqa",
    } <= set(rendered)
    assert "Secret" not in {o["kind"] for o in rendered.values()}  # the chart only references Secrets

    migrate = rendered["Job/docqa-migrate"]
    assert migrate["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert migrate["spec"]["template"]["spec"]["containers"][0]["args"] == ["db", "upgrade"]

    pod = rendered["Deployment/docqa"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    # The probes use the plain-HTTP metrics port, so they keep working when the service ports speak TLS.
    assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    env = {e["name"]: e for e in container["env"]}
    assert env["DOCQA_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "docqa-database", "key": "database-url"}
    assert env["DOCQA_GENERATOR__WATSONX__API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "docqa-watsonx"
    assert env["DOCQA_INDEX__OPENSEARCH__PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "docqa-opensearch"
    assert env["DOCQA_INDEX__OPENSEARCH__URL"]["value"] == "https://opensearch.search.svc:9200"
    assert {"name": "jwt", "secret": {"secretName": "docqa-jwt", "defaultMode": 0o440}} in pod["volumes"]
    assert "replicas" not in rendered["Deployment/docqa"]["spec"]  # the HPA owns the replica count

    service_ports = {p["name"]: p["port"] for p in rendered["Service/docqa"]["spec"]["ports"]}
    assert service_ports == {"grpc": 50051, "http": 8080, "metrics": 9090}


def test_rendered_configuration_is_accepted_by_docqa(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ConfigMap's file passes DocQA's own validation once the Secrets' values are in the environment."""
    config_map = objects(render(production_values()))["ConfigMap/docqa"]
    config = tmp_path / "docqa.yaml"
    config.write_text(config_map["data"]["docqa.yaml"])
    key = tmp_path / "public.pem"
    key.write_text("-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n")
    clear_docqa_env(monkeypatch)
    monkeypatch.setenv("DOCQA_DATABASE_URL", "postgresql+psycopg://docqa:pw@postgres/docqa")
    monkeypatch.setenv("DOCQA_GENERATOR__WATSONX__API_KEY", "k")
    monkeypatch.setenv("DOCQA_INDEX__OPENSEARCH__URL", "https://opensearch.search.svc:9200")
    monkeypatch.setenv("DOCQA_AUTH__RS256_PUBLIC_KEY_FILE", str(key))
    ca = Authority.create(tmp_path, "ca")  # the mounted TLS Secrets (test_helm_security checks the mounts)
    served = ca.server()
    monkeypatch.setenv("DOCQA_SERVER__TLS__CERT_FILE", str(served.cert))
    monkeypatch.setenv("DOCQA_SERVER__TLS__KEY_FILE", str(served.key))
    monkeypatch.setenv("DOCQA_SERVER__TLS__CLIENT_CA_FILE", str(ca.cert))
    monkeypatch.setenv("DOCQA_SERVER__METRICS_TOKEN", "m" * 32)
    settings = load_settings(config)
    server = settings.server
    assert (server.host, server.grpc_port, server.http_port, server.metrics_port) == ("0.0.0.0", 50051, 8080, 9090)
    assert settings.index.backend == "opensearch" and settings.generator.backend == "watsonx"
    assert settings.limits.rate.grpc.enabled and settings.limits.rate.graphql.enabled


def test_notes_tell_how_to_reach_both_apis(values: dict[str, Any]) -> None:
    text = notes(render(values))
    assert "docqa.docqa.svc:50051" in text and "/graphql" in text and "port-forward svc/docqa" in text


def test_opensearch_from_the_official_chart_or_an_external_url() -> None:
    chart_yaml = yaml.safe_load((CHART / "Chart.yaml").read_text())
    dependency = next(d for d in chart_yaml["dependencies"] if d["name"] == "opensearch")
    assert dependency["condition"] == "opensearch.enabled"
    assert dependency["repository"] == "https://opensearch-project.github.io/helm-charts/"

    external = objects(render(merged(MINIMAL, {"opensearch": {"externalUrl": "https://os.example:9200"}})))
    env = {
        e["name"]: e.get("value")
        for e in external["Deployment/docqa"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["DOCQA_INDEX__OPENSEARCH__URL"] == "https://os.example:9200"


def test_indexer_as_a_one_off_job() -> None:
    rendered = objects(render(merged(MINIMAL, {"indexer": {"enabled": True, "schedule": "", "store": "docs"}})))
    job = rendered["Job/docqa-indexer-1"]
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "index",
        "/documents",
        "--store",
        "docs",
        "--quiet",
    ]
    kubernetes_validate.validate(job, KUBERNETES, strict=True)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"replicaCount": "two"}, "/replicaCount"),
        ({"resources": 5}, "/resources"),
        ({"service": {"grpcPort": "grpc"}}, "/service/grpcPort"),
        ({"autoscaling": {"enabled": "yes"}}, "/autoscaling/enabled"),
        ({"secrets": {"database": {"existingSecret": 7}}}, "/secrets/database/existingSecret"),
        ({"replicaCunt": 2}, "replicaCunt"),
    ],
)
def test_a_wrong_value_type_fails_rendering(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        render(values)


def test_the_dockerfile_builds_what_the_chart_runs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert "FROM python:3.11-slim" in dockerfile
    assert '"torch==2.13.0"' in pyproject and "torch==2.13.0" in dockerfile  # the same CPU torch
    for needed in ("proto", "acl", "indexer", "service"):  # stubs are generated from proto/ beside service/
        assert f"COPY {needed} ./{needed}" in dockerfile
    assert 'ENTRYPOINT ["docqa"]' in dockerfile
    deployment = objects(render(MINIMAL))["Deployment/docqa"]["spec"]["template"]["spec"]
    assert deployment["containers"][0]["args"] == ["serve"]
    assert deployment["securityContext"]["runAsUser"] == 10001 and "USER 10001:10001" in dockerfile
