"""A short soak in CI: two ``docqa serve`` replicas on a PostgreSQL of the soak's own, under load, while
PostgreSQL is stopped and a replica is killed, and (a second run) while a watsonx.ai stand-in and an OpenSearch
fake fail in every way the soak knows; every invariant must hold (``bench/soak``). The long run is
``python -m bench.soak --minutes 30`` (docs/operations.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.soak.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}


pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def soak(tmp_path: Path, *args: str) -> dict[str, Any]:
    """The report of ``python -m bench.soak ARGS`` (two client threads), which must exit 0; a skip without a
    PostgreSQL server of the soak's own."""
    ok, why = Cluster.available()
    if not ok:
        pytest.skip(f"the soak needs a PostgreSQL server of its own: {why}")
    report_file = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--clients", "2", *args, "--json", str(report_file)],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report: dict[str, Any] = json.loads(report_file.read_text())
    return report


def test_a_short_soak_keeps_every_invariant(tmp_path: Path) -> None:
    report = soak(
        tmp_path, "--minutes", "1.5", "--fault-every", "20", "--faults", "postgres-down,replica-kill,postgres-slow"
    )
    assert report["violations"] == []
    assert report["faults_by_kind"].get("postgres-down") == 1
    assert report["served"] > 0 and all(f["recovery_s"] is not None for f in report["faults"])
    assert "INTERNAL" not in report["errors"]


def test_a_short_soak_with_a_failing_language_model_and_opensearch_keeps_every_invariant(tmp_path: Path) -> None:
    report = soak(
        tmp_path, "--minutes", "0.25", "--fault-every", "2", "--llm", "watsonx-standin", "--index", "opensearch-fake",
        "--faults", "watsonx,opensearch", "--each-once",
    )  # fmt: skip
    assert report["violations"] == [] and report["skipped"] == {}
    kinds = ["watsonx-429", "watsonx-500", "watsonx-hang", "watsonx-cut"]
    kinds += ["opensearch-429", "opensearch-503", "opensearch-hang", "opensearch-drop"]
    assert report["faults_by_kind"] == dict.fromkeys(kinds, 1)
    assert all(f["recovery_s"] is not None for f in report["faults"])
    # The model answered outside its faults, and during them the replicas answered with the sources only.
    assert report["answered_by_the_model"] > 0 and report["answered_without_it"] > 0
    assert "INTERNAL" not in str(report["errors"])


def test_without_their_stand_ins_the_dependency_faults_are_skipped_with_how_to_run_them(tmp_path: Path) -> None:
    from bench.soak.faults import injectable
    from bench.soak.run import Soak, faults_named
    from bench.soak.standins import StandIns

    names = faults_named("watsonx-cut,opensearch")
    assert names == ["watsonx-cut", "opensearch-429", "opensearch-503", "opensearch-hang", "opensearch-drop"]
    soak = Soak(tmp_path, 1.0, 40.0, names, 1, 37, 2048.0)
    soak.standins = StandIns(tmp_path)  # the defaults: extractive answers, the embedded index
    refused = {name: injectable(name, soak) for name in names}
    assert not any(ok for ok, _ in refused.values())
    assert "run with --llm watsonx-standin" in refused["watsonx-cut"][1]
    assert all("run with --index opensearch-fake" in why for _, why in list(refused.values())[1:])


def test_a_fault_the_soak_cannot_inject_is_named_not_passed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--faults", "postgres-down,earthquake"],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "unknown fault(s) earthquake" in done.stderr + done.stdout
