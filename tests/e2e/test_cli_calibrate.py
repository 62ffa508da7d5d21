"""``docqa settings calibrate`` as an administrator runs it on the sample corpus, and the served mutation for a
non-admin: real processes, the packaged embedding model."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli import DOCQA, ROOT, run

DEFAULT_SCALE = {"min_threshold": 0.0, "max_threshold": 0.7}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    empty = tmp_path_factory.mktemp("empty-corpus")
    (empty / "acl.yaml").write_text("documents: []\n")
    data = tmp_path_factory.mktemp("data")
    assert "7 indexed" in run(data, "index", str(corpus), "--store", "acme", "--quiet").stdout
    assert "0 indexed" in run(data, "index", str(empty), "--store", "empty", "--quiet").stdout
    return data


def _scale(data_dir: Path) -> dict[str, Any]:
    shown = json.loads(run(data_dir, "settings", "show", "acme", "--json").stdout)
    return {k: shown[k] for k in DEFAULT_SCALE}


def test_the_report_predicts_and_changes_nothing(data_dir: Path) -> None:
    report = json.loads(run(data_dir, "settings", "calibrate", "acme", "--json").stdout)
    assert (report["store_id"], report["documents"], report["documents_sampled"]) == ("acme", 7, 7)
    assert report["probes"]["titles"] == 7 and report["probes"]["off_topic"] >= 60
    assert report["current"] == DEFAULT_SCALE and report["applied"] is False
    proposed = report["proposed"]
    assert -1 <= proposed["min_threshold"] < proposed["max_threshold"] <= 1
    assert [p["level"] for p in report["predictions"]] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    # The packaged model scores the corpus's own titles and headings well above everyday questions.
    assert report["answerable"]["percentiles"]["p50"] > report["off_topic"]["percentiles"]["p95"]
    # Fewer answerable probes read relevance 1.00 on the calibrated scale than on the fixed 0.00-0.70 one.
    assert report["proposed_saturated"] < report["current_saturated"]
    assert any("rough" in w for w in report["warnings"])  # 7 documents
    # The corpus's headings turned toward products it never names ("… in Mercurial"): the check of the names
    # they ask about refuses them, whatever the threshold; off-topic probes alone would not show it.
    assert report["probes"]["near_domain"] > 0 and report["near_domain_refused_by_names"] >= 0.9
    assert all(p["current"]["near_refusal_rate"] >= 0.9 for p in report["predictions"])
    assert _scale(data_dir) == DEFAULT_SCALE


def test_apply_stores_the_proposed_scale(data_dir: Path) -> None:
    out = run(data_dir, "settings", "calibrate", "acme", "--apply", "--sample", "5").stdout
    assert "predicted" in out and "5 of 7 documents sampled" in out and "warning: only 5 document(s)" in out
    applied = re.search(r"^applied: min_threshold (\S+), max_threshold (\S+)$", out, re.MULTILINE)
    assert applied is not None, out
    assert _scale(data_dir) == {"min_threshold": float(applied[1]), "max_threshold": float(applied[2])}
    run(data_dir, "settings", "set", "acme", "--min-threshold", "0.0", "--max-threshold", "0.7")


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["nope"], 3, "error: store 'nope' not found"),
        (["empty", "--apply"], 2, "error: store empty has no indexed chunks to calibrate from"),
        (["acme", "--sample", "0"], 2, "error: sample must be an integer between 1 and 5000, got 0"),
        (["acme", "--level", "0.3"], 2, "'settings calibrate' does not take --level"),
    ],
    ids=["unknown-store", "empty-store", "bad-sample", "set-option"],
)
def test_bad_calibrations_are_clear_errors(data_dir: Path, args: list[str], code: int, says: str) -> None:
    result = run(data_dir, "settings", "calibrate", *args, check=False)
    assert result.returncode == code and says in result.stderr and result.stdout == ""


def test_a_served_non_admin_is_forbidden(data_dir: Path) -> None:
    bob = run(data_dir, "token", "--user", "bob").stdout.strip()
    env = {**os.environ, "DOCQA_DATA_DIR": str(data_dir)}
    env.pop("DOCQA_CONFIG", None)
    process = subprocess.Popen(
        [*DOCQA, "serve", "--grpc-port", "0", "--http-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        graphql = re.search(r"GraphQL on (http://\S+/graphql)", first)
        assert graphql is not None, first
        request = urllib.request.Request(
            graphql.group(1),
            data=json.dumps(
                {"query": 'mutation { calibrateStore(storeId: "acme", apply: true) { applied } }'}
            ).encode(),
            headers={"content-type": "application/json", "authorization": f"Bearer {bob}"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            [error] = json.loads(reply.read())["errors"]
        assert error["extensions"]["code"] == "FORBIDDEN" and "admin role" in error["message"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr
    assert _scale(data_dir) == DEFAULT_SCALE
