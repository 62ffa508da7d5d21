"""The chart's indexing Job across many workers: Indexed mode, one shard per pod, a GPU option; rendered by Helm's
own template engine and validated against Kubernetes' schemas."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.helm_render import (
    KUBERNETES,
    MINIMAL,
    assert_valid,
    helm,
    kubernetes_validate,
    merged,
    objects,
    production_values,
    render,
)

INDEXING = {"indexing": {"enabled": True, "shards": 3, "store": "docs", "path": "/documents"}}


def job(values: dict[str, Any]) -> dict[str, Any]:
    rendered = objects(render(values))
    assert_valid(rendered)
    return rendered["Job/docqa-indexing-1"]


def test_off_by_default() -> None:
    assert not any(name.startswith("Job/docqa-indexing") for name in objects(render(production_values())))


def test_an_indexed_job_with_one_shard_per_pod() -> None:
    manifest = job(merged(production_values(), INDEXING))
    spec = manifest["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 3)
    assert spec["backoffLimitPerIndex"] == 2  # a failed shard is retried alone, and resumes
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    container = pod["containers"][0]
    assert container["args"] == ["index", "/documents", "--store", "docs", "--shard", "$(JOB_COMPLETION_INDEX)/3"]
    env = {e["name"]: e for e in container["env"]}
    assert env["JOB_COMPLETION_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    )
    names = list(env)
    assert names.index("JOB_COMPLETION_INDEX") < names.index("DOCQA_CONFIG")  # defined before $(...) uses it
    assert env["DOCQA_CONFIG"]["value"] == "/etc/docqa/config/jobs.yaml"
    assert env["DOCQA_INDEX__OPENSEARCH__URL"]["value"] == "https://opensearch.search.svc:9200"
    assert env["DOCQA_INDEX__OPENSEARCH__PASSWORD"]["valueFrom"]["secretKeyRef"]["name"] == "docqa-opensearch"
    assert env["DOCQA_DATABASE_URL"]["valueFrom"]["secretKeyRef"]["name"] == "docqa-database"
    assert "DOCQA_GENERATOR__WATSONX__API_KEY" not in env  # an indexer answers nothing
    assert "nvidia.com/gpu" not in container["resources"].get("limits", {}) and "nodeSelector" not in pod
    assert manifest["metadata"]["labels"]["app.kubernetes.io/component"] == "indexer"  # the indexer's policy


def test_a_gpu_per_worker() -> None:
    values = merged(
        production_values(),
        INDEXING,
        {
            "indexing": {
                "gpu": {"enabled": True, "count": 2},
                "nodeSelector": {"pool": "indexing"},
                "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
                "image": {"repository": "registry.example.com/docqa-cuda", "tag": "0.1.0"},
            }
        },
    )
    pod = job(values)["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert container["resources"]["limits"]["memory"] == "4Gi"
    assert pod["nodeSelector"] == {"pool": "indexing", "nvidia.com/gpu.present": "true"}
    assert [t["key"] for t in pod["tolerations"]] == ["batch", "nvidia.com/gpu"]
    assert container["image"] == "registry.example.com/docqa-cuda:0.1.0"


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (merged(MINIMAL, INDEXING), "config.index.backend: opensearch"),
        (
            merged(MINIMAL, INDEXING, {"config": {"index": {"backend": "opensearch"}}}),
            "secrets.database.existingSecret",
        ),
    ],
)
def test_shards_need_a_shared_index_and_catalog(values: dict[str, Any], words: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=words):
        render(values)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"indexing": {"shards": 0}}, "/indexing/shards"),
        ({"indexing": {"shards": "four"}}, "/indexing/shards"),
        ({"indexing": {"gpu": {"enabled": "yes"}}}, "/indexing/gpu/enabled"),
        ({"indexing": {"shard": 2}}, "shard"),
    ],
)
def test_a_wrong_indexing_value_fails_rendering(values: dict[str, Any], where: str) -> None:
    with pytest.raises(helm.HelmValuesError, match=where):
        render(merged(MINIMAL, values))


def test_the_job_is_valid_for_the_oldest_kubernetes_supported() -> None:
    kubernetes_validate.validate(job(merged(production_values(), INDEXING)), KUBERNETES, strict=True)
