"""bench/provenance.py: the commit, machine and date a benchmark's figures were measured on, kept with them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench import provenance


def test_record_prints_one_line_and_appends_one_json_line_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(provenance.RESULTS_ENV, str(tmp_path))
    path = provenance.record("toy", {"p50_ms": 1.5, "rows": 10}, argv=["--rows", "10"])
    provenance.record("toy", {"p50_ms": 1.7, "rows": 10}, argv=["--rows", "10"])
    assert path == tmp_path / "toy.jsonl"
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [entry["figures"]["p50_ms"] for entry in entries] == [1.5, 1.7]
    first = entries[0]
    assert first["script"] == "toy" and first["argv"] == ["--rows", "10"]
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", first["provenance"]["commit"])
    machine = first["provenance"]["machine"]
    assert machine["cores"] >= 1 and machine["usable_cores"] >= 1 and machine["cpu_model"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", first["provenance"]["date"])
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(line.startswith("provenance: commit ") for line in printed)


def test_the_commit_is_this_checkouts_head() -> None:
    head = (Path(provenance.ROOT) / ".git").exists()
    found = provenance.commit()
    if head:
        assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", found)
    else:
        assert found == "unknown"
