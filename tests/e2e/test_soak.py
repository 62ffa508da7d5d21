"""A short soak in CI: two ``docqa serve`` replicas on a PostgreSQL of the soak's own, under load, while
PostgreSQL is stopped and a replica is killed; every invariant must hold (``bench/soak``). The README's long
run is ``python -m bench.soak --minutes 30``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.soak.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}


pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_short_soak_keeps_every_invariant(tmp_path: Path) -> None:
    ok, why = Cluster.available()
    if not ok:
        pytest.skip(f"the soak needs a PostgreSQL server of its own: {why}")
    report_file = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--minutes", "1.5", "--fault-every", "20", "--clients", "2",
         "--faults", "postgres-down,replica-kill,postgres-slow", "--json", str(report_file)],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(report_file.read_text())
    assert report["violations"] == []
    assert report["faults_by_kind"].get("postgres-down") == 1
    assert report["served"] > 0 and all(f["recovery_s"] is not None for f in report["faults"])
    assert "INTERNAL" not in report["errors"]


def test_a_fault_the_soak_cannot_inject_is_named_not_passed(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", "--faults", "postgres-down,earthquake"],
        cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "unknown fault(s) earthquake" in done.stderr + done.stdout
