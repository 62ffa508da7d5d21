"""Every benchmark script starts and says what it does (``--help``), is listed in bench/README.md, and the
cheap ones run at a toy size; those that record leave their figures with the commit and machine they ran on.

Figures are not checked (tests never assert on wall time): only that the scripts keep working.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
#: Shared modules, not scripts.
MODULES = {"figures", "peer_adapters", "provenance"}
#: Run as ``python -m bench.<name>`` (they import ``bench.*`` or ``tests.*`` from the repository root).
AS_MODULE = {"answers", "summary", "leakage", "soak"}
#: The packages run as ``python -m bench.<name>``.
PACKAGES = sorted(path.parent.name for path in BENCH.glob("*/__main__.py"))
SCRIPTS = [*sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in MODULES), *PACKAGES]


def run(name: str, *args: str, results: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    if results is not None:
        env["DOCQA_BENCH_RESULTS"] = str(results)
    command = ["-m", f"bench.{name}"] if name in AS_MODULE else [str(BENCH / f"{name}.py")]
    result = subprocess.run(
        [sys.executable, *command, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Traceback" not in result.stdout + result.stderr
    return result


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_prints_its_help(name: str) -> None:
    out = run(name, "--help").stdout
    assert out.startswith("usage:"), out[:200]


def test_every_script_is_in_the_index() -> None:
    index = (BENCH / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+)(?:\.py|/)` \|", index, flags=re.MULTILINE))
    assert listed == set(SCRIPTS) | {"peer_adapters"}


def recorded(results: Path, name: str) -> dict[str, object]:
    lines = (results / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    entry: dict[str, object] = json.loads(lines[0])
    assert entry["script"] == name
    provenance = entry["provenance"]
    assert isinstance(provenance, dict)
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", str(provenance["commit"]))
    assert set(provenance["machine"]) >= {"cores", "load_average", "cpu_model"}
    return entry


@pytest.mark.slow
def test_indexing_prints_and_records_its_figures_with_their_provenance(tmp_path: Path) -> None:
    out = run("indexing", "--docs", "2", "--repeat", "1", results=tmp_path).stdout
    assert "best of 1: raw encode" in out
    assert re.search(r"^provenance: commit \S+ · \d+/\d+ cores · load ", out, flags=re.MULTILINE), out
    figures = recorded(tmp_path, "indexing")["figures"]
    assert isinstance(figures, dict) and figures["docs"] == 2 and figures["chunks"] > 0


def test_metadata_filter_runs_at_a_toy_size() -> None:
    out = run("metadata_filter", "--chunks", "400", "--queries", "3").stdout
    assert "no filter (ACL only)" in out and "narrow: glob legal/*.pdf" in out


@pytest.mark.slow
def test_history_runs_at_a_toy_size() -> None:
    out = run("history", "--rows", "300", "--repeat", "3").stdout
    assert "first page (baseline)" in out and "x" in out


@pytest.mark.slow
def test_wide_k_runs_at_a_toy_size() -> None:
    out = run("wide_k", "--rows", "3000", "--queries", "3").stdout
    assert "50%" in out and "0.5%" in out
