"""Every benchmark script starts and says what it does (``--help``), is listed in bench/README.md, and records its
figures; each runs at a toy size here (but ``embedders``, ``quality``, ``rerank`` and ``leakage``, which have test
files of their own), printing its figures with the commit, machine and date they were measured on and appending
them to its results file (``bench/provenance.py``; here a temporary folder through ``DOCQA_BENCH_RESULTS``).

Figures are not checked (tests never assert on wall time): only that the scripts keep working and record what
they print. A script that needs what this machine may lack (a corpus from a Debian package, Milvus Lite,
PostgreSQL's server binaries) runs on a tiny corpus made here, or is skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.soak.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
#: Shared modules, not scripts.
MODULES = {"figures", "peer_adapters", "provenance"}
#: Run as ``python -m bench.<name>`` (they import ``bench.*`` or ``tests.*`` from the repository root).
AS_MODULE = {"answers", "summary", "leakage", "soak"}
#: The packages run as ``python -m bench.<name>``.
PACKAGES = sorted(path.parent.name for path in BENCH.glob("*/__main__.py"))
SCRIPTS = [*sorted(path.stem for path in BENCH.glob("*.py") if path.stem not in MODULES), *PACKAGES]
PROVENANCE_LINE = re.compile(r"^provenance: commit \S+ · \d+/\d+ cores · load (?:[0-9. ]+|n/a) · .+ · \d{4}-", re.M)


def run(
    name: str, *args: str, results: Path | None = None, timeout: int = 300, ok: bool = True
) -> subprocess.CompletedProcess[str]:
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
    if ok:
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-4000:]
    return result


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_prints_its_help(name: str) -> None:
    out = run(name, "--help").stdout
    assert out.startswith("usage:"), out[:200]


def test_every_script_is_in_the_index() -> None:
    index = (BENCH / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z_]+)(?:\.py|/)` \|", index, flags=re.MULTILINE))
    assert listed == set(SCRIPTS) | {"peer_adapters"}


def test_every_script_records_its_figures() -> None:
    """Each script (for a package, its entry point) calls ``provenance.record``; the toy runs below show it works."""
    silent = []
    for name in SCRIPTS:
        entry = BENCH / name / "__main__.py" if name in PACKAGES else BENCH / f"{name}.py"
        if not re.search(r"^from (bench\.)?provenance import record\b", entry.read_text(encoding="utf-8"), re.M):
            silent.append(name)
    assert silent == []


def recorded(results: Path, name: str) -> dict[str, Any]:
    """The one entry the run appended to ``<results>/<name>.jsonl``: its figures, with their provenance."""
    lines = (results / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    entry: dict[str, Any] = json.loads(lines[0])
    assert entry["script"] == name
    provenance = entry["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}(\+dirty)?|unknown", str(provenance["commit"]))
    assert set(provenance["machine"]) >= {"cores", "load_average", "cpu_model"}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", provenance["date"])
    figures: dict[str, Any] = entry["figures"]
    return figures


def toy_run(name: str, args: list[str], results: Path, timeout: int = 300) -> tuple[str, dict[str, Any]]:
    """Run ``name`` with ``args``; its output (which must carry the provenance line) and the figures it recorded."""
    out = run(name, *args, results=results, timeout=timeout).stdout
    assert PROVENANCE_LINE.search(out), out[-2000:]
    return out, recorded(results, name)


@dataclass(frozen=True)
class Toy:
    """A script at a toy size: its arguments, a line of its table, and what its recorded figures must hold."""

    name: str
    args: list[str]
    prints: str
    holds: Callable[[dict[str, Any]], bool] = field(repr=False)
    slow: bool = False


def _callers(figures: dict[str, Any]) -> bool:
    return set(figures) >= {"50%", "5%", "0.5%"}


TOYS = [
    Toy("answers", ["--rounds", "3"], "key term quoted", lambda f: f["cases"] > 0 and "key_term_share" in f["now"]),
    Toy(
        "grpc_load",
        ["--concurrency", "2", "--seconds", "1", "--documents", "20", "--baseline-s", "0.3"],
        "gRPC, 2 clients",
        lambda f: f["requests"] > 0 and f["errors"] == 0,
    ),
    Toy("history", ["--rows", "300", "--repeat", "3"], "first page (baseline)", lambda f: f["rows"] == 300),
    Toy(
        "principals",
        ["--users", "0,200", "--seconds", "0.1"],
        "by member ms",
        lambda f: [r["users"] for r in f["rows"]] == [0, 200],
    ),
    Toy("lexical", ["--chunks", "300", "--queries", "3"], "one pass/lexical", lambda f: _callers(f["latency"])),
    Toy(
        "lexical_statistics",
        ["--chunks", "200", "--questions", "5"],
        "embedded             topical",
        lambda f: "embedded, topical, 10% readable" in f,
    ),
    Toy(
        "metadata_filter",
        ["--chunks", "1000", "--queries", "3"],
        "narrow: glob legal/*.pdf",
        lambda f: f["narrow: glob legal/*.pdf"]["matches"] == 10,  # the 1 % of legal PDFs, not an empty filter
    ),
    Toy(
        "opensearch_ingest",
        ["--documents", "20"],
        "fewer segments",
        lambda f: f["documents"] == 20 and f["before"]["requests"] > 0 and f["after"]["requests"] > 0,
    ),
    Toy(
        "sanitize",
        ["--answers", "5", "--chars", "400"],
        "markdown-it render (baseline)",
        lambda f: {"sanitize, whole answer", "sanitize, streamed in 7-char pieces"} <= set(f),
    ),
    Toy("retrieval", ["--sizes", "3000", "--queries", "5"], "hnsw16 p50", lambda f: _callers(f["3000 chunks"])),
    Toy("wide_k", ["--rows", "3000", "--queries", "3"], "calibrated p50", lambda f: set(f) >= {"100%", "0.5%"}),
    Toy("cold_cli", ["--runs", "1"], "docqa ask --server", lambda f: f["runs"] == 1 and "docqa --help" in f, True),
    Toy(
        "concurrency",
        ["--chunks", "200", "--seconds", "0.3", "--clients", "1"],
        "transport clients",
        lambda f: f["chunks"] >= 200 and {"fts5/grpc/1", "memory/grpc/1", "memory/graphql/1"} <= set(f),
        slow=True,
    ),
    Toy(
        "server_cpu",
        ["--chunks", "200", "--seconds", "0.5", "--rounds", "1", "--clients", "1"],
        "server CPU ms/question",
        lambda f: f["chunks"] >= 200 and {"this/graphql/1", "this/grpc/1"} <= set(f["medians"]),
        slow=True,
    ),
]


@pytest.mark.parametrize(
    "toy", [pytest.param(toy, id=toy.name, marks=[pytest.mark.slow] if toy.slow else []) for toy in TOYS]
)
def test_a_toy_run_prints_and_records_its_figures(toy: Toy, tmp_path: Path) -> None:
    out, figures = toy_run(toy.name, toy.args, tmp_path)
    assert toy.prints in out, out[-2000:]
    assert toy.holds(figures), figures


@pytest.mark.slow
def test_indexing_prints_and_records_its_figures_with_their_provenance(tmp_path: Path) -> None:
    out, figures = toy_run("indexing", ["--docs", "2", "--repeat", "1"], tmp_path)
    assert "best of 1: raw encode" in out
    assert figures["docs"] == 2 and figures["chunks"] > 0


@pytest.mark.slow
def test_indexing_compares_a_precision_with_fp32_in_one_run(tmp_path: Path) -> None:
    args = ["--docs", "2", "--repeat", "1", "--precision", "bf16", "--threads", "1"]
    out = run("indexing", *args, results=tmp_path, timeout=300).stdout
    assert PROVENANCE_LINE.search(out), out[-2000:]
    assert "1 thread(s), batch 32: fp32" in out and "ratio" in out
    figures = recorded(tmp_path, "indexing-precision")
    assert figures["precision"] == "bf16" and figures["1"]["ratio"] > 0  # bf16, or fp32 where it is unavailable


def test_peers_records_every_cell_a_skipped_one_with_its_reason(tmp_path: Path) -> None:
    args = ["--sizes", "3000", "--queries", "5", "--budget-s", "10", "--systems", "docqa,exact,chroma"]
    args += ["--skip", "chroma@3000=memory: skipped on purpose", "--json", str(tmp_path / "peers.json")]
    out, figures = toy_run("peers", args, tmp_path)
    assert "| 3k | chroma | not run: memory: skipped on purpose |" in out
    cells = {cell["system"]: cell for cell in figures["results"]}
    assert [cells[s]["status"] for s in ("docqa", "exact")] == ["ok", "ok"]
    assert cells["chroma"]["status"] == "not run: memory: skipped on purpose"


PAGE = "<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body}</p></body></html>"
#: Three pages standing for the PostgreSQL manual (``postgresql-doc-15``, not installed here): one ``sql-*``
#: page (readable by ``group:dba`` only in end_to_end.py's manifest) and two readable by everyone.
PAGES = {
    "indexes-concurrently.html": ("Building Indexes", "CREATE INDEX CONCURRENTLY avoids locking out writes."),
    "routine-vacuuming.html": ("Routine Vacuuming", "VACUUM FULL rewrites the table and needs an exclusive lock."),
    "sql-grant.html": ("GRANT", "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;"),
}


def write_pages(folder: Path) -> Path:
    folder.mkdir()
    for name, (title, body) in PAGES.items():
        (folder / name).write_text(PAGE.format(title=title, body=" ".join([body] * 5)), encoding="utf-8")
    return folder


def test_lexical_compares_the_tokenizers_on_a_folder_of_pages(tmp_path: Path) -> None:
    pages = write_pages(tmp_path / "pages")
    questions = tmp_path / "questions.yaml"
    questions.write_text('- {question: "How do I vacuum a table?", expected: [routine-vacuuming.html]}\n')
    args = ["--pages", str(pages), "--questions", str(questions), "--chunks", "30", "--queries", "3"]
    out, figures = toy_run("lexical", args, tmp_path / "results")
    assert "3 chunks of 3 pages; 1 questions" in out
    assert set(figures["tokenizers"]) == {"unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2"}
    assert figures["tokenizers"]["porter unicode61 remove_diacritics 2"]["hit@1"] == 1.0  # vacuum ~ Vacuuming


@pytest.mark.slow
def test_end_to_end_indexes_a_small_corpus_of_pages_and_records(tmp_path: Path) -> None:
    """The PostgreSQL manual stands in for three generated pages (``postgresql-doc-15`` need not be installed)."""
    corpus = write_pages(tmp_path / "html")
    args = ["--corpus", str(corpus), "--rounds", "1", "--json", str(tmp_path / "e2e.json")]
    out, figures = toy_run("end_to_end", args, tmp_path / "results")
    assert "chunks/s" in out and figures["files"] == 3
    assert figures["queries"]["restricted_chunks_returned"]["alice"] == 0  # sql-grant.html is group:dba's


@pytest.mark.slow
def test_shards_records_both_runs_and_that_the_stores_agree(tmp_path: Path) -> None:
    out, figures = toy_run("shards", ["--docs", "2", "--repeat", "1"], tmp_path)
    assert "2 processes --shard:" in out
    assert figures["same_store"] is True and figures["chunks"] > 0


@pytest.mark.slow
def test_fresh_start_times_both_saved_graphs_and_records(tmp_path: Path) -> None:
    # k = 10: at 20,000 rows the graph serves the 50 % caller's k = 10 (k = 60 only from ~100,000 rows).
    args = ["--rows", "20000", "--k", "10", "--runs", "1", "--data-dir", str(tmp_path / "store")]
    out, figures = toy_run("fresh_start", args, tmp_path / "results")
    assert "median: saved rows" in out
    assert figures["rows"] == 20000 and set(figures["median_s"]) == {"saved rows", "baseline"}


@pytest.mark.slow
def test_fresh_server_records_every_measurement(tmp_path: Path) -> None:
    args = ["--rows", "20000", "--writes", "1", "--seconds", "0.5"]
    out, figures = toy_run("fresh_server", args, tmp_path)
    assert "another process's graph save -> answered by it" in out
    assert len(figures["adoption_s"]) == 3 and len(figures["latency_while_indexing"]) == 3


def test_fresh_server_below_the_graphs_size_says_so(tmp_path: Path) -> None:
    failed = run("fresh_server", "--rows", "10000", results=tmp_path, ok=False)
    assert failed.returncode == 2 and "--rows must be at least 20000" in failed.stderr


MILVUS = importlib.util.find_spec("pymilvus") is not None


@pytest.mark.skipif(not MILVUS, reason="Milvus Lite (pymilvus, the [bench] extra) is not installed")
def test_milvus_probe_runs_at_a_toy_size(tmp_path: Path) -> None:
    out, figures = toy_run("milvus_probe", ["--rows", "200", "--index-types", "FLAT", "--repeats", "2"], tmp_path)
    assert "| FLAT | none |" in out and "FLAT, array_contains_any (1 group)" in figures


@pytest.mark.skipif(MILVUS, reason="pymilvus is installed: the toy run above runs instead")
def test_milvus_probe_without_milvus_lite_says_what_to_install(tmp_path: Path) -> None:
    failed = run("milvus_probe", "--rows", "200", results=tmp_path, ok=False)
    assert failed.returncode == 1 and "pip install -e .[bench]" in failed.stderr
    assert not (tmp_path / "milvus_probe.jsonl").exists()


def test_summary_summarises_pdfs_made_of_a_small_folder_of_pages(tmp_path: Path) -> None:
    """``--manual``: a few generated pages stand in for the PostgreSQL manual (``postgresql-doc-15``)."""
    manual = tmp_path / "manual"
    manual.mkdir()
    sentence = "vacuum reclaims the storage of dead rows and analyze gathers the statistics the planner reads"
    words = sentence.split()
    for n in range(6):
        text = "".join(f"<p>{' '.join(words[(n + i + j) % len(words)] for j in range(50))}.</p>" for i in range(10))
        (manual / f"page{n}.html").write_text(f"<html><title>Chapter {n}</title><body>{text}</body></html>")
    args = ["--pages", "3", "--baseline-pages", "1", "--manual", str(manual)]
    out, figures = toy_run("summary", args, tmp_path / "results")
    assert "load+chunk+index s" in out
    assert figures["baseline"]["pages"] == 1 and figures["measured"]["pages"] == 3
    assert figures["measured"]["chunks"] > figures["baseline"]["chunks"]


def test_summary_without_the_manual_says_what_to_install(tmp_path: Path) -> None:
    failed = run("summary", "--manual", str(tmp_path), results=tmp_path, ok=False)
    assert failed.returncode == 1 and "no HTML page with text" in failed.stderr


def test_followups_on_a_generated_pair_and_its_pages(tmp_path: Path) -> None:
    """A pair of questions on three generated pages stands in for the manual the shipped pairs name."""
    pages = tmp_path / "pages"
    pages.mkdir()
    for name, (title, body) in {
        "create-index.html": ("CREATE INDEX", "CREATE INDEX CONCURRENTLY builds an index without locking writes."),
        "drop-index.html": ("DROP INDEX", "DROP INDEX CONCURRENTLY drops an index without blocking writes."),
        "vacuum.html": ("VACUUM", "VACUUM reclaims the storage of dead rows."),
    }.items():
        (pages / name).write_text(PAGE.format(title=title, body=body), encoding="utf-8")
    pair = {
        "id": "t1",
        "first": "How do I build an index without locking out writes?",
        "first_documents": ["create-index.html"],
        "follow_up": "And how do I drop one the same way?",
        "standalone": "How do I drop an index without blocking writes?",
        "documents": ["drop-index.html"],
        "terms": ["concurrently"],
    }
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text(json.dumps({"corpus": "generated", "root": str(pages), "pairs": [pair]}), encoding="utf-8")
    args = ["--pairs", str(pairs), "--others", "1", "--data-dir", str(tmp_path / "data")]
    out, figures = toy_run("followups", args, tmp_path / "results")
    assert "1 follow-up pairs; 3 pages indexed" in out and "t1: 'And how do I drop one the same way?' ->" in out
    assert set(figures) >= {"follow-up alone", "offline rewrite", "standalone (gold)"} and figures["chunks"] == 3


@pytest.mark.slow
def test_a_short_soak_records_its_report(tmp_path: Path) -> None:
    available, why = Cluster.available()
    if not available:
        pytest.skip(f"the soak needs a PostgreSQL server of its own: {why}")
    args = ["--minutes", "0.2", "--fault-every", "4", "--faults", "postgres-slow", "--clients", "1"]
    out, figures = toy_run("soak", args, tmp_path, timeout=600)
    assert '"faults_by_kind"' in out
    assert figures["violations"] == [] and figures["faults_by_kind"] == {"postgres-slow": 1}
