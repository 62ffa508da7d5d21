"""``bench/rerank.py`` as a user runs it, at a toy size: it runs and reports every row (figures are not checked)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_rerank_bench_reports_each_row_against_its_baseline() -> None:
    env = {k: v for k, v in os.environ.items() if k != "DOCQA_CONFIG"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's packages, whichever the environment has installed
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "rerank.py"), "--queries", "2", "--candidates", "5"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    for row in (
        "embed the question (baseline)",
        "default, chunks seen before",
        "default, chunks not seen before",
        "heading on, vectors cached",
        "heading on, every title new (8 embedded)",
        "sentence on, nothing cached",
    ):
        assert f"| {row} | " in result.stdout, row
