"""The Helm chart rendered by Helm's own template engine (helm-python-sdk, no helm binary, offline), and
validated against Kubernetes' schemas (kubernetes-validate), for the chart tests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

helm = pytest.importorskip("helm_python", reason="helm-python-sdk (test extra) renders the chart")
kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate (test extra)")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "docqa"
#: The oldest Kubernetes the chart supports.
KUBERNETES = "1.30.0"
#: The least a release needs: HS256 with one signing key shared by every replica, and iss/aud.
MINIMAL: dict[str, Any] = {
    "secrets": {"jwtSigning": {"existingSecret": "docqa-jwt-signing"}},
    "config": {"auth": {"issuer": "docqa", "audience": "docqa"}},
}


def production_values() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load((CHART / "values-production.example.yaml").read_text())
    return values


def merged(base: dict[str, Any], *overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each override merged in, maps key by key (as Helm merges values files)."""
    out = copy.deepcopy(base)
    for override in overrides:
        for key, value in override.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merged(out[key], value)
            else:
                out[key] = copy.deepcopy(value)
    return out


def render(values: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Template path -> the Kubernetes objects it renders (NOTES.txt as one text object)."""
    chart = helm.Chart.load(CHART)
    rendered = chart.render(values, name="docqa", namespace="docqa", is_install=True)
    out: dict[str, list[dict[str, Any]]] = {}
    for path, text in rendered.items():
        if path.endswith("NOTES.txt"):
            out[path] = [{"notes": text}]
            continue
        out[path] = [doc for doc in yaml.safe_load_all(text) if doc]
    return out


def objects(rendered: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for docs in rendered.values() for o in docs if "kind" in o}


def notes(rendered: dict[str, list[dict[str, Any]]]) -> str:
    return next(str(docs[0]["notes"]) for path, docs in rendered.items() if path.endswith("NOTES.txt"))


def assert_valid(rendered: dict[str, dict[str, Any]]) -> None:
    """Every manifest is valid Kubernetes (strict: no unknown field)."""
    for name, manifest in rendered.items():
        try:
            kubernetes_validate.validate(manifest, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}: {exc.message} at {list(exc.path)}")


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    """The pod spec of a Deployment, Job or CronJob."""
    spec = manifest["spec"]
    if manifest["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    pod: dict[str, Any] = spec["template"]["spec"]
    return pod
