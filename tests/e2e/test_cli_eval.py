"""``docqa eval`` as a user runs it: the sample corpus, its question file, a report and clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_cli import ROOT, run

pytestmark = pytest.mark.e2e

QUESTIONS = ROOT / "examples" / "acme-questions.yaml"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("corpus") / "acme"
    shutil.copytree(ROOT / "examples" / "acme", corpus)
    data = tmp_path_factory.mktemp("data")
    run(data, "index", str(corpus), "--store", "acme", "--quiet")
    return data


def test_eval_reports_per_question_and_in_sum(data_dir: Path, tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    out = run(data_dir, "eval", str(QUESTIONS), "--store", "acme", "--as", "bob", "--json", str(report_file)).stdout
    assert "a01" in out and "hit@1" in out and "refused" in out
    report = json.loads(report_file.read_text())
    summary = report["summary"]
    assert (summary["answerable"], summary["unanswerable"]) == (4, 2)
    assert summary["hit_at_1"] == 1.0 and summary["refused"] == 1.0 and summary["answered"] == 1.0
    assert summary["terms"] >= 0.75
    assert {r["id"] for r in report["results"]} == {"a01", "a02", "a03", "a04", "u01", "u02"}


def test_identifier_questions_get_their_own_line(data_dir: Path, tmp_path: Path) -> None:
    marked = tmp_path / "marked.yaml"
    text = QUESTIONS.read_text(encoding="utf-8")
    marked.write_text(
        text.replace("documents: [handbook/security.html]", "documents: [handbook/security.html]\n    identifier: true")
    )
    out = run(data_dir, "eval", str(marked), "--store", "acme", "--as", "bob", "--quiet").stdout
    assert "naming an identifier 1: hit@3 1.000" in out
    plain = run(data_dir, "eval", str(QUESTIONS), "--store", "acme", "--as", "bob", "--quiet").stdout
    assert "naming an identifier" not in plain


def test_json_to_stdout_is_one_object(data_dir: Path) -> None:
    out = run(data_dir, "eval", str(QUESTIONS), "--store", "acme", "--as", "bob", "--quiet", "--json", "-").stdout
    assert json.loads(out)["store_id"] == "acme"


def test_bad_files_and_unknown_stores_are_one_line_errors(data_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("questions:\n  - id: a\n    question: [unclosed\n")
    result = run(data_dir, "eval", str(broken), "--store", "acme", "--as", "bob", check=False)
    assert result.returncode == 2 and "broken.yaml:" in result.stderr
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("questions:\n  - id: a\n    question: Where?\n    documents: [nope.md]\n")
    result = run(data_dir, "eval", str(unknown), "--store", "acme", "--as", "bob", check=False)
    assert result.returncode == 2 and "unknown.yaml:2:" in result.stderr and "nope.md" in result.stderr
    result = run(data_dir, "eval", str(QUESTIONS), "--store", "nope", "--as", "bob", check=False)
    assert result.returncode == 3 and "not found" in result.stderr
