"""Fresh and live servers on the embedded index: a saved graph, and other processes' writes.

    python bench/fresh_server.py [--rows 100000] [--writes 10] [--seconds 10]

The corpus is ``bench/retrieval.py``'s (384-d clustered vectors, 10 chunks per
document, ACL allow-lists); queries are its 50 % caller's, which the HNSW graph
serves. On one store file under a temporary folder it prints:

* fresh start -- seconds from opening the index in a fresh process (here: a new
  ``EmbeddedIndex``) to its first answer served by the graph, with the graph
  file as the last build saved it, against without it (the first answer is
  exact; the graph is rebuilt and calibrated first);
* visibility  -- seconds from another process's commit (a child process that
  upserts one document at a time) to the running index answering with it,
  applying the store's change log against reloading every row (how the index
  caught up before the log; forced here by making the log say nothing);
* while indexing -- the running index's query p50 while a child process writes
  batches of 1000 chunks, against idle, again with the log and with reloads.

Figures, not asserts; ``x`` is the baseline's figure divided by the new one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from retrieval import CALLERS, DIM, STORE, K, load, make_corpus  # bench/retrieval.py

from indexer.index.embedded.graph_file import graph_path
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.filters import acl_filter

ROOT = Path(__file__).resolve().parents[1]
CALLER = acl_filter(CALLERS["50%"])

# A child process that writes: ``one`` document per line it is told to, or
# ``batches`` of 100 documents until killed; it prints each commit's wall time.
WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np
    from acl.model import Acl
    from indexer.index.embedded.index import EmbeddedIndex
    from indexer.index.port import ChunkRecord
    data_dir, mode, dim = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    index = EmbeddedIndex(data_dir, background=False)
    rng = np.random.default_rng(7)
    acl = Acl.of(["group:g2"])

    def document(name, vectors):
        return [ChunkRecord(f"{name}#{i}", name, i, name, name, "file:///" + name, (), 0, 0, acl, vector=v)
                for i, v in enumerate(vectors)]

    def unit(count):
        v = rng.standard_normal((count, dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    print("ready", flush=True)
    if mode == "one":
        for line in sys.stdin:
            name, vector = json.loads(line)
            index.upsert("bench", document(name, [np.asarray(vector, np.float32)] * 10))
            print(time.time(), flush=True)
    else:
        batch = 0
        while True:
            batch += 1
            vectors = unit(1000)
            chunks = [c for d in range(100) for c in document(f"w{batch}-{d}", vectors[d * 10 : d * 10 + 10])]
            index.upsert("bench", chunks)
            print(time.time(), flush=True)
""")


@contextmanager
def writer(data_dir: Path, mode: str) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir), mode, str(DIM)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        yield child
    finally:
        child.kill()
        child.wait()


@contextmanager
def full_reloads() -> Iterator[None]:
    """Make the change log say nothing, so that the index reloads every row (the old behaviour)."""
    real = ChunkTable.catch_up
    ChunkTable.catch_up = lambda self: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        ChunkTable.catch_up = real  # type: ignore[method-assign]


def fresh_start(data_dir: Path, query: np.ndarray, saved: bool) -> tuple[float, float, str]:
    """(seconds to the first answer, seconds to the first graph answer, how the graph came)."""
    path = graph_path(data_dir / f"{STORE}.sqlite")
    aside = path.with_name(path.name + ".aside")
    if not saved:
        path.rename(aside)
    try:
        started = time.perf_counter()
        index = EmbeddedIndex(data_dir)
        index.knn(STORE, query, K, CALLER)
        first = time.perf_counter() - started
        if index.stats(STORE).last_plan != "hnsw":
            index.prepare(STORE)  # what the background builder would do, at once
            index.knn(STORE, query, K, CALLER)
        graph = time.perf_counter() - started
        stats = index.stats(STORE)
        how = f"{'loaded' if stats.graph_loaded else 'built'}, plan {stats.last_plan}"
        index.close()
    finally:
        if not saved:
            path.unlink(missing_ok=True)
            aside.rename(path)
    return first, graph, how


def visibility(index: EmbeddedIndex, data_dir: Path, writes: int, seed: int) -> list[float]:
    """Seconds from each of the child's commits to the index answering with the document."""
    rng = np.random.default_rng(seed)
    delays = []
    with writer(data_dir, "one") as child:
        assert child.stdin is not None and child.stdout is not None
        for number in range(writes):
            vector = rng.standard_normal(DIM).astype(np.float32)
            vector /= np.linalg.norm(vector)
            name = f"live{seed}-{number}"
            child.stdin.write(json.dumps([name, vector.tolist()]) + "\n")
            child.stdin.flush()
            deadline = time.time() + 60
            while time.time() < deadline:  # poll as a busy server would: every query checks for other writes
                hits = index.knn(STORE, vector, 1, CALLER)
                if hits and hits[0].chunk.document_id == name:
                    seen = time.time()
                    break
            else:
                raise SystemExit(f"{name} never became visible")
            delays.append(seen - float(child.stdout.readline()))
    return delays


def query_latency(index: EmbeddedIndex, queries: np.ndarray, seconds: float) -> tuple[float, float, float, int]:
    """(p50, p99, max in ms, queries run) over ``seconds`` of queries."""
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for query in queries:
            t0 = time.perf_counter()
            index.knn(STORE, query, K, CALLER)
            times.append(time.perf_counter() - t0)
            if time.perf_counter() >= deadline:
                break
    p50, p99 = percentiles(times)
    return p50 * 1e3, p99 * 1e3, max(times) * 1e3, len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=10, help="single-document writes timed to visibility")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of queries per p50")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.rows < 10_000 or args.writes < 1 or args.seconds <= 0:
        parser.error("--rows must be at least 10000, --writes at least 1, --seconds positive")

    with tempfile.TemporaryDirectory(prefix="docqa-fresh-") as folder:
        data_dir = Path(folder)
        corpus = make_corpus(args.rows, 50, sigma=0.6, spectrum="decaying", seed=args.seed)
        started = time.perf_counter()
        index = EmbeddedIndex(data_dir)
        load(index, corpus, args.seed)
        loaded = time.perf_counter()
        index.prepare(STORE)
        built = time.perf_counter()
        index.close()
        size = graph_path(data_dir / f"{STORE}.sqlite").stat().st_size
        print(
            f"# {args.rows:,} chunks: write to SQLite {loaded - started:.1f} s;"
            f" graph build + calibration + save {built - loaded:.1f} s; graph file {size / 2**20:.0f} MiB",
            flush=True,
        )

        query = corpus.queries[0]
        cold_first, cold_graph, cold_how = fresh_start(data_dir, query, saved=False)
        warm_first, warm_graph, warm_how = fresh_start(data_dir, query, saved=True)
        print(f"fresh start, first answer:       saved graph {warm_first:7.2f} s | no graph file {cold_first:7.2f} s")
        print(
            f"fresh start, first graph answer: saved graph {warm_graph:7.2f} s ({warm_how})"
            f" | no graph file {cold_graph:7.2f} s ({cold_how}) | x {cold_graph / warm_graph:.1f}"
        )

        server = EmbeddedIndex(data_dir)
        query_latency(server, corpus.queries, 1.0)  # warm up
        # Everything with the change log first: a full reload drops the graph (it is rebuilt after).
        live = visibility(server, data_dir, args.writes, seed=1)
        idle = query_latency(server, corpus.queries, args.seconds)
        with writer(data_dir, "batches"):
            busy = query_latency(server, corpus.queries, args.seconds)
        logged = server.stats(STORE)
        plans = dict(logged.plans)
        with full_reloads():
            reload = visibility(server, data_dir, args.writes, seed=2)
            with writer(data_dir, "batches"):
                old = query_latency(server, corpus.queries, args.seconds)
        live_p50, reload_p50 = float(np.median(live)), float(np.median(reload))
        print(
            f"write -> visible (p50 of {args.writes}):   change log {live_p50 * 1e3:7.1f} ms"
            f" | full reload {reload_p50 * 1e3:7.1f} ms | x {reload_p50 / live_p50:.1f}"
        )
        print(
            f"# with the change log: {logged.catch_ups} catch-ups, {logged.reloads} full reloads,"
            f" graph {logged.graph_rows:,} of {logged.rows + logged.tombstones:,} rows, plans {plans}"
        )
        print("query latency, ms: p50 / p99 / max (queries run in the period)")
        for label, (p50, p99, worst, count) in (
            ("idle", idle),
            ("another process indexing, change log", busy),
            ("another process indexing, full reload", old),
        ):
            print(f"  {label:<38} {p50:7.2f} / {p99:8.2f} / {worst:8.1f} ({count})")
        print(f"  indexing / idle p50: x {busy[0] / idle[0]:.2f}", end="; ")
        print(
            f"full reload / change log: p50 x {old[0] / busy[0]:.1f}, p99 x {old[1] / busy[1]:.1f},"
            f" max x {old[2] / busy[2]:.1f}"
        )
        server.close()


if __name__ == "__main__":
    main()
