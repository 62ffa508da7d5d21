"""The chart's NetworkPolicies, rendered by Helm's own engine: every pod is selected by exactly the policy meant
for it, the migration Job runs under a policy of its own from the first install on (a hook created before it),
and the service pods reach the shared rate-limit store, whose URL only they get."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.helm_render import (
    MINIMAL,
    assert_valid,
    merged,
    notes,
    objects,
    pod_spec,
    production_values,
    render,
)

#: The production example with its migration Job and indexer.
PRODUCTION = merged(production_values(), {"indexer": {"enabled": True}})
HOOK = "helm.sh/hook"


def _pod_labels(manifest: dict[str, Any]) -> dict[str, str]:
    spec = manifest["spec"]["jobTemplate"]["spec"] if manifest["kind"] == "CronJob" else manifest["spec"]
    labels: dict[str, str] = spec["template"]["metadata"]["labels"]
    return labels


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a NetworkPolicy's podSelector matches pods with ``labels`` (matchLabels and In/NotIn/Exists)."""
    selector = policy["spec"]["podSelector"]
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for term in selector.get("matchExpressions", []):
        value = labels.get(term["key"])
        if term["operator"] == "In" and value not in term["values"]:
            return False
        if term["operator"] == "NotIn" and value in term["values"]:
            return False
        if term["operator"] == "Exists" and value is None:
            return False
    return True


def _policies_of(rendered: dict[str, dict[str, Any]], pod: str) -> set[str]:
    labels = _pod_labels(rendered[pod])
    return {name for name, o in rendered.items() if o["kind"] == "NetworkPolicy" and _selects(o, labels)}


def _egress_ports(policy: dict[str, Any]) -> set[int | str]:
    return {port["port"] for rule in policy["spec"]["egress"] for port in rule["ports"]}


def test_each_pod_is_selected_by_exactly_its_own_policy() -> None:
    rendered = objects(render(PRODUCTION))
    assert_valid(rendered)
    assert _policies_of(rendered, "Deployment/docqa") == {"NetworkPolicy/docqa"}
    assert _policies_of(rendered, "CronJob/docqa-indexer") == {"NetworkPolicy/docqa-jobs"}
    # Not the indexer's too: the union would let the Job reach OpenSearch, which it never calls.
    assert _policies_of(rendered, "Job/docqa-migrate") == {"NetworkPolicy/docqa-migrate"}


def test_the_migration_job_runs_under_its_own_policy_created_before_it() -> None:
    rendered = objects(render(PRODUCTION))
    hooks = {
        name: o["metadata"]["annotations"]
        for name, o in rendered.items()
        if HOOK in o["metadata"].get("annotations", {})
    }
    assert set(hooks) == {"NetworkPolicy/docqa-migrate", "ConfigMap/docqa-migrate", "Job/docqa-migrate"}
    # Every one of them on a first install as on an upgrade: the chart's other policies do not exist yet on the
    # first (hooks run before the release's resources), and the Job's pods match none of those on the next.
    for marks in hooks.values():
        assert marks[HOOK] == "pre-install,pre-upgrade"
        # Replaced when the next release's hooks run, deleted once all of them have succeeded (Helm deletes
        # hook-succeeded resources after the last hook of the event, so never while the Job runs).
        assert marks["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    order = sorted(hooks, key=lambda name: int(hooks[name]["helm.sh/hook-weight"]))
    assert order == ["NetworkPolicy/docqa-migrate", "ConfigMap/docqa-migrate", "Job/docqa-migrate"]
    assert len({hooks[name]["helm.sh/hook-weight"] for name in order}) == 3  # strictly before, not alongside

    policy = rendered["NetworkPolicy/docqa-migrate"]
    assert _selects(policy, _pod_labels(rendered["Job/docqa-migrate"]))
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and policy["spec"]["ingress"] == []
    assert _egress_ports(policy) == {53, 5432}  # DNS and the database: all `docqa db upgrade` needs
    database = next(rule for rule in policy["spec"]["egress"] if rule["ports"][0]["port"] == 5432)
    assert database["to"] == PRODUCTION["networkPolicy"]["egress"]["database"]["to"]
    assert pod_spec(rendered["Job/docqa-migrate"])["containers"][0]["args"] == ["db", "upgrade"]


@pytest.mark.parametrize(
    ("values", "present"),
    [
        ({"networkPolicy": {"enabled": False}}, {"Job/docqa-migrate"}),  # no policies at all: none for the Job
        ({"migration": {"enabled": False}}, {"NetworkPolicy/docqa", "NetworkPolicy/docqa-jobs"}),
        # SQLite in the pod: no Job to run
        ({"secrets": {"database": {"existingSecret": ""}}}, {"NetworkPolicy/docqa", "NetworkPolicy/docqa-jobs"}),
    ],
)
def test_the_job_policy_comes_and_goes_with_the_job_and_the_policies(values: dict[str, Any], present: set[str]) -> None:
    rendered = objects(render(merged(production_values(), values)))
    names = {"Job/docqa-migrate", "NetworkPolicy/docqa-migrate", "NetworkPolicy/docqa", "NetworkPolicy/docqa-jobs"}
    assert names & set(rendered) == present


def _env(manifest: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e for e in pod_spec(manifest)["containers"][0]["env"]}


def test_the_shared_rate_limit_store_is_the_service_pods_alone() -> None:
    rendered = objects(render(PRODUCTION))
    uri = _env(rendered["Deployment/docqa"])["DOCQA_LIMITS__RATE__STORAGE_URI"]
    assert uri["valueFrom"]["secretKeyRef"] == {"name": "docqa-rate-limit", "key": "storage-uri"}
    for pod in ("CronJob/docqa-indexer", "Job/docqa-migrate"):
        assert "DOCQA_LIMITS__RATE__STORAGE_URI" not in _env(rendered[pod])
    assert "storage_uri" not in rendered["ConfigMap/docqa"]["data"]["docqa.yaml"]  # it may hold a password
    store = next(r for r in rendered["NetworkPolicy/docqa"]["spec"]["egress"] if r["ports"][0]["port"] == 6379)
    assert store["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "redis"}}}]
    for policy in ("NetworkPolicy/docqa-jobs", "NetworkPolicy/docqa-migrate"):
        assert 6379 not in _egress_ports(rendered[policy])
    assert "NOTE: config.limits.rate is counted by each replica" not in notes(render(PRODUCTION))

    key = objects(render(merged(MINIMAL, {"secrets": {"rateLimitStore": {"existingSecret": "rl", "key": "url"}}})))
    assert _env(key["Deployment/docqa"])["DOCQA_LIMITS__RATE__STORAGE_URI"]["valueFrom"]["secretKeyRef"] == {
        "name": "rl",
        "key": "url",
    }


def test_without_a_store_each_replica_counts_alone_and_the_notes_say_so() -> None:
    values = merged(PRODUCTION, {"secrets": {"rateLimitStore": {"existingSecret": ""}}})
    rendered = objects(render(values))
    assert "DOCQA_LIMITS__RATE__STORAGE_URI" not in _env(rendered["Deployment/docqa"])
    assert 6379 not in _egress_ports(rendered["NetworkPolicy/docqa"])  # no store, no way out to one
    assert "NOTE: config.limits.rate is counted by each replica" in notes(render(values))
    assert "NOTE: config.limits.rate" not in notes(render(merged(MINIMAL, {"replicaCount": 3})))  # no limits set
