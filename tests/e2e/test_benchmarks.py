"""The benchmarks as a user runs them, at a toy size: they run, report every cell and write their JSON.

Figures are not checked (tests never assert on wall time); what is checked is
that the scripts keep working and keep their promises: DocQA's results agree
with exact search, a skipped or missing peer is reported, not left out, and the
end-to-end run indexes with the CLI and separates the callers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def bench(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("DOCQA_CONFIG", None)
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout
    return result


def test_peers_reports_every_cell_and_docqa_agrees_with_exact(tmp_path: Path) -> None:
    out = tmp_path / "peers.json"
    result = bench(
        "peers.py",
        "--sizes", "3000", "--queries", "8", "--budget-s", "30",
        "--systems", "docqa,exact,chroma",
        "--skip", "chroma@3000=memory: skipped on purpose",
        "--json", str(out),
    )  # fmt: skip
    report: dict[str, Any] = json.loads(out.read_text())
    cells = {r["system"]: r for r in report["results"]}
    assert set(cells) == {"docqa", "exact", "chroma"}
    assert cells["chroma"]["status"] == "not run: memory: skipped on purpose"
    assert "| 3k | chroma | not run: memory: skipped on purpose |" in result.stdout
    for system in ("docqa", "exact"):
        assert cells[system]["status"] == "ok"
        for label in ("50%", "5%", "0.5%"):
            cell = cells[system]["selectivity"][label]
            assert cell["queries"] == 8
            assert cell["under"] == 0
            assert cell["readable"] >= 10
    assert all(cells["exact"]["selectivity"][s]["recall"] == 1.0 for s in ("50%", "5%", "0.5%"))
    assert all(cells["docqa"]["selectivity"][s]["recall"] >= 0.95 for s in ("50%", "5%", "0.5%"))
    assert "| 3k | docqa |" in result.stdout


PAGE = "<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"


def test_end_to_end_indexes_with_the_cli_and_times_both_query_kinds(tmp_path: Path) -> None:
    corpus = tmp_path / "html"
    corpus.mkdir()
    pages = {
        "indexes-concurrently.html": ("Building Indexes", "CREATE INDEX CONCURRENTLY avoids locking writes."),
        "routine-vacuuming.html": ("Routine Vacuuming", "VACUUM FULL rewrites the table and needs an exclusive lock."),
        "sql-grant.html": ("GRANT", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;"),
    }
    for name, (title, body) in pages.items():
        (corpus / name).write_text(PAGE.format(title=title, body=" ".join([body] * 5)))
    out = tmp_path / "e2e.json"
    result = bench("end_to_end.py", "--corpus", str(corpus), "--max-files", "0", "--rounds", "1", "--json", str(out))
    report: dict[str, Any] = json.loads(out.read_text())
    assert report["files"] == 3
    assert report["index"]["chunks"] >= 3
    for kind in ("search", "ask --no-llm"):
        figures = report["queries"][kind]
        assert figures["queries"] == len(report["questions"]) * len(report["users"])
        assert set(figures["share"]) == {"embed", "search", "access", "assembly"}
        assert abs(sum(figures["share"].values()) - 1.0) < 1e-6
    assert "chunks/s" in result.stdout
    assert report["queries"]["restricted_chunks_returned"]["alice"] == 0
    assert report["queries"]["restricted_chunks_returned"]["dba1"] > 0


def test_sanitize_bench_reports_each_row_against_its_baseline() -> None:
    out = bench("sanitize.py", "--answers", "5", "--chars", "400").stdout
    for row in ("markdown-it render (baseline)", "sanitize, whole answer", "sanitize, streamed in 7-char pieces"):
        assert row in out


def test_lexical_bench_prints_each_caller_and_both_tokenizers(tmp_path: Path) -> None:
    out = bench("lexical.py", "--chunks", "300", "--queries", "3").stdout
    for caller in ("50%", "5%", "0.5%"):
        assert f"{caller:>8} " in out
    assert "one pass p50" in out and "one pass/lexical" in out  # the baseline, measured in the same run
    pages = tmp_path / "pages"
    pages.mkdir()
    for name, text in {
        "a": "Unused vacation days carry over",
        "b": "Reset a password",
        "c": "Expense receipts",
    }.items():
        (pages / f"{name}.html").write_text(f"<html><title>{name}</title><body><h1>{name}</h1><p>{text}</p></body>")
    questions = tmp_path / "q.yaml"
    questions.write_text('- {question: "Can days be carried over?", expected: [a.html]}\n')
    out = bench(
        "lexical.py", "--pages", str(pages), "--questions", str(questions), "--chunks", "30", "--queries", "3"
    ).stdout
    assert "3 chunks of 3 pages; 1 questions" in out
    assert "porter unicode61 remove_diacritics 2" in out and "  1.00   1.00   1.00" in out


def test_quality_bench_prints_every_mode_side_by_side(tmp_path: Path) -> None:
    out = bench(
        "quality.py",
        "--questions",
        str(ROOT / "examples" / "acme-questions.yaml"),
        "--corpus",
        str(ROOT / "examples" / "acme"),
        "--data-dir",
        str(tmp_path),
        "--against",
        "HEAD",
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    labels = [row.split(" | ")[0].lstrip("| ") for row in rows[1:]]
    assert labels[:6] == [
        "dense",
        "lexical (BM25)",
        "hybrid rrf",
        "hybrid weighted",
        "hybrid + rerank (default)",
        "hybrid + adapted reranker",  # no model trained here: the offline reranker, with its warning
    ]
    # Today's answerer as committed at HEAD, on the same store, scored the same way; then the calibrated scale.
    assert labels[6] == "HEAD (default, as committed there)"
    assert labels[7].startswith("hybrid + rerank (default), calibrated")
    assert all(len(row.split(" | ")) == 14 for row in rows)
    assert "rerank p50 at 30 candidates: offline" in out
    # The bench leaves the store's settings as it found them.
    reports = sorted((ROOT / "bench" / "results").glob("quality-*.json"))
    assert json.loads(reports[-1].read_text())["dense"]["summary"]["answerable"] == 4


def test_shards_bench_compares_one_process_with_two_and_the_stores_agree() -> None:
    result = bench("shards.py", "--docs", "3", "--repeat", "1")
    assert "1 process:" in result.stdout and "2 processes --shard:" in result.stdout
    assert "ratio" in result.stdout and "same store" in result.stdout and ": yes" in result.stdout


def test_embedders_bench_puts_each_backend_next_to_torch() -> None:
    out = bench(
        "embedders.py", "--chunks", "8", "--queries", "3", "--repeat", "1", "--pipeline-docs", "1", "--int8"
    ).stdout
    for row in ("| torch fp32 | ", "| onnx fp32 | ", "| onnx int8 | ", "whole indexing path", "cold process"):
        assert row in out
    for row in (
        "| torch fp32, sequential | ",
        "| onnx fp32, sequential | ",
        "| onnx fp32, read-ahead 2 batches | ",
        "| onnx int8, read-ahead 2 batches | ",
    ):
        assert row in out  # the whole path: one thread each, and ONNX reading ahead, next to torch
    assert "onnx " in out and "torch imported: False" in out  # the ONNX cold process never imports torch
