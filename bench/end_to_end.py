"""End to end on a real corpus: index it with the CLI, then time search and retrieval-only ask.

    python bench/end_to_end.py [--corpus /usr/share/doc/postgresql-doc-15/html] [--max-files 0]

Corpus: the PostgreSQL 15 HTML documentation from Debian's ``postgresql-doc-15``
package (``apt-get install postgresql-doc-15``). The first ``--max-files`` HTML
files (sorted by name; 0 = all) are copied into a temporary folder with a
generated ACL manifest: everything readable by ``group:everyone`` except the SQL
command reference (``sql-*.html``), readable only by ``group:dba``
(``user:dba1``) and denied to ``user:mallory``.

1. ``docqa index`` runs as a subprocess against a temporary data directory;
   its wall time (model load included) and chunks/s are reported.
2. In-process (``build_app``), a fixed list of PostgreSQL questions runs through
   ``docqa search`` (VectorQuery, k 10, no LLM) and retrieval-only ``docqa ask``
   (VectorQuery, the store's default k and relevancy level, no LLM), as
   ``alice`` (everyone) and ``dba1`` (everyone + dba). It reports p50/p99 of
   ``Answer.timings_ms['total']`` and the share of embedding, search, access
   check and answer assembly (the rest of total: store lookup, principals,
   threshold, source records). Figures, not asserts; JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STORE = "pgdocs"
DEFAULT_CORPUS = "/usr/share/doc/postgresql-doc-15/html"
USERS = ("alice", "dba1")
WARMUP = 3

QUESTIONS = [
    "How do I create an index concurrently without locking writes?",
    "What does VACUUM FULL do and when should I use it?",
    "How can I grant SELECT on all tables in a schema to a role?",
    "How do I configure streaming replication between two servers?",
    "What is the difference between a B-tree and a GIN index?",
    "How do I back up a database with pg_dump?",
    "How does multiversion concurrency control work?",
    "What transaction isolation levels are supported?",
    "How do I write a PL/pgSQL function that returns a table?",
    "How do I partition a table by range?",
    "What does the EXPLAIN ANALYZE output mean?",
    "How do I change the shared_buffers setting?",
    "How do I create a foreign key constraint?",
    "What JSON operators does PostgreSQL support for jsonb?",
    "How do I set up client authentication in pg_hba.conf?",
    "How do window functions like row_number work?",
    "How can I use a common table expression with WITH RECURSIVE?",
    "What is point-in-time recovery with WAL archiving?",
    "How do I create a trigger that runs before insert?",
    "How does full text search with tsvector and tsquery work?",
]

MANIFEST = """\
groups:
  dba: [user:dba1]
documents:
  - match: "sql-*.html"
    allow: [group:dba]
    deny: [user:mallory]
  - match: "**"
    allow: [group:everyone]
    deny: [user:mallory]
"""


def prepare_corpus(source: Path, max_files: int, folder: Path) -> tuple[int, int, int]:
    """Copy the HTML files into ``folder`` with a manifest; return (files, bytes, available)."""
    files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix.lower() in (".html", ".htm"))
    available = len(files)
    if max_files > 0:
        files = files[:max_files]
    total = 0
    for path in files:
        target = folder / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        total += path.stat().st_size
    (folder / "acl.yaml").write_text(MANIFEST)
    return len(files), total, available


def index_with_cli(folder: Path, data_dir: Path) -> tuple[float, int, str]:
    cli = Path(sys.executable).with_name("docqa")
    command = [str(cli)] if cli.exists() else [sys.executable, "-m", "service.api.cli"]
    command += ["--data-dir", str(data_dir), "index", str(folder), "--store", STORE, "--quiet"]
    env = dict(os.environ, DOCQA_DATA_DIR=str(data_dir))
    env.pop("DOCQA_CONFIG", None)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"docqa index failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    summary = done.stdout.strip().splitlines()[-1]
    match = re.search(r"\((\d+) chunks\)", summary)
    return wall, int(match.group(1)) if match else 0, summary


def run_queries(data_dir: Path, rounds: int) -> dict[str, Any]:
    os.environ["DOCQA_DATA_DIR"] = str(data_dir)
    os.environ.pop("DOCQA_CONFIG", None)
    from service.bootstrap import build_app
    from service.config import load_settings
    from service.domain.queries import Caller, VectorQuery

    app = build_app(load_settings(None))
    started = time.perf_counter()
    app.engine.ask(Caller("alice"), VectorQuery(STORE, "warm up", None, 10, perform_llm_query=False))
    first = time.perf_counter() - started  # model load + index open
    kinds = {
        "search": lambda q: VectorQuery(STORE, q, None, 10, perform_llm_query=False),
        "ask --no-llm": lambda q: VectorQuery(STORE, q, None, None, perform_llm_query=False),
    }
    out: dict[str, Any] = {"first_query_s": first}
    restricted = dict.fromkeys(USERS, 0)  # sql-*.html chunks each user got back: alice must get none
    for name, make in kinds.items():
        for question in QUESTIONS[:WARMUP]:
            app.engine.ask(Caller(USERS[0]), make(question))
        totals: list[float] = []
        parts = {"embed": 0.0, "search": 0.0, "access": 0.0, "assembly": 0.0}
        hits: list[int] = []
        wall: list[float] = []
        non_embed: list[float] = []
        for _ in range(rounds):
            for question in QUESTIONS:
                for user in USERS:
                    t0 = time.perf_counter()
                    answer = app.engine.ask(Caller(user), make(question))
                    wall.append((time.perf_counter() - t0) * 1e3)
                    timings = answer.timings_ms
                    totals.append(timings["total"])
                    non_embed.append(timings["total"] - timings.get("embed", 0.0))
                    known = 0.0
                    for key in ("embed", "search", "access"):
                        parts[key] += timings.get(key, 0.0)
                        known += timings.get(key, 0.0)
                    parts["assembly"] += timings["total"] - known
                    hits.append(len(answer.chunks))
                    restricted[user] += sum(PurePosixPath(c.document_id).name.startswith("sql-") for c in answer.chunks)
        p50, p99 = percentiles(totals)
        grand = sum(parts.values())
        out[name] = {
            "queries": len(totals),
            "p50_ms": p50,
            "p99_ms": p99,
            "caller_wall_p50_ms": percentiles(wall)[0],
            "share": {k: v / grand for k, v in parts.items()},
            "mean_ms": {k: v / len(totals) for k, v in parts.items()},
            "non_embed_p50_ms": percentiles(non_embed)[0],
            "mean_hits": float(np.mean(hits)),
        }
    out["restricted_chunks_returned"] = restricted
    app.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", default=DEFAULT_CORPUS, help="folder of HTML files (default: %(default)s)")
    parser.add_argument("--max-files", type=int, default=0, help="index only the first N files (0 = all)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the question list")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "end_to_end.json"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder and data directory")
    args = parser.parse_args()
    if args.rounds < 1 or args.max_files < 0:
        parser.error("--rounds must be at least 1 and --max-files at least 0")
    source = Path(args.corpus)
    if not source.is_dir():
        sys.exit(f"{source} is not a folder (apt-get install postgresql-doc-15, or pass --corpus)")
    work = Path(tempfile.mkdtemp(prefix="docqa-e2e-"))
    try:
        folder, data_dir = work / "corpus", work / "data"
        folder.mkdir()
        files, size, available = prepare_corpus(source, args.max_files, folder)
        print(f"# corpus {source}: {files} of {available} HTML files, {size / 1e6:.1f} MB", flush=True)
        wall, chunks, summary = index_with_cli(folder, data_dir)
        print(f"# docqa index: {summary}", flush=True)
        print(
            f"index: {files} files, {chunks} chunks in {wall:.1f} s (CLI wall time, model load included)"
            f" -> {chunks / wall:.1f} chunks/s, {files / wall:.2f} files/s",
            flush=True,
        )
        queries = run_queries(data_dir, args.rounds)
        print(f"first query (model load + index open): {queries['first_query_s']:.1f} s")
        seen = ", ".join(f"{user} {n}" for user, n in queries["restricted_chunks_returned"].items())
        print(f"sql-*.html chunks returned (group:dba only): {seen}")
        print(
            f"{'query':<13} {'n':>4} {'p50 ms':>8} {'p99 ms':>8} {'hits':>5} | share: "
            f"{'embed':>6} {'search':>6} {'access':>6} {'assembly':>8} | all but embed p50 ms"
        )
        for name in ("search", "ask --no-llm"):
            r = queries[name]
            s = r["share"]
            print(
                f"{name:<13} {r['queries']:>4} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['mean_hits']:5.1f} | "
                f"       {s['embed']:6.1%} {s['search']:6.1%} {s['access']:6.1%} {s['assembly']:8.1%} | "
                f"{r['non_embed_p50_ms']:.2f}"
            )
        result = {
            "corpus": str(source),
            "files": files,
            "files_available": available,
            "bytes": size,
            "index": {"wall_s": wall, "chunks": chunks, "chunks_per_s": chunks / wall, "summary": summary},
            "queries": queries,
            "questions": QUESTIONS,
            "users": USERS,
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"),
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=2))
        print(f"# written {args.json}")
        record("end_to_end", {k: v for k, v in result.items() if k not in ("questions", "cpus", "date")})
    finally:
        if args.keep:
            print(f"# kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
