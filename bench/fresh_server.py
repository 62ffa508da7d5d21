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
* adoption    -- seconds from another process's save of a graph file (put in
  place by rename, as ``graph_file.save`` does) to a running index that had
  none answering from it, against building its own (the fresh start above);
* while indexing -- the running index's query p50 / p99 / max while a child
  process writes batches of 1000 chunks (``--batch-interval``), against idle: with the change log
  and today's lock, with the lock before (writer-preferring, the graph
  extended in fixed 256-row slices under it), and with full reloads. Each
  starts from a copy of the same store (graph file included).

Figures, not asserts; ``x`` is the baseline's figure divided by the new one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py
from retrieval import CALLERS, DIM, STORE, K, load, make_corpus  # bench/retrieval.py

from indexer.index.embedded import graph, store
from indexer.index.embedded.graph_file import graph_path
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.sqlite import ChunkTable
from indexer.index.filters import acl_filter

ROOT = Path(__file__).resolve().parents[1]
CALLER = acl_filter(CALLERS["50%"])

# A child process that writes: ``one`` document per line it is told to, or
# ``batches`` of 100 documents (one every ``interval`` seconds at most) until
# killed; it prints each commit's wall time.
WRITER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import numpy as np
    from acl.model import Acl
    from indexer.index.embedded.index import EmbeddedIndex
    from indexer.index.port import ChunkRecord
    data_dir, mode, dim, interval = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
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
            began = time.perf_counter()
            index.upsert("bench", chunks)
            print(time.time(), flush=True)
            time.sleep(max(0.0, interval - (time.perf_counter() - began)))
""")


@contextmanager
def writer(data_dir: Path, mode: str, interval: float = 0.0) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(data_dir), mode, str(DIM), str(interval)],
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


class WriterPreferringLock:
    """The store lock before 2026-11-24: a waiting writer blocks new readers, and nothing lets
    the readers that waited in before the same writer comes back."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@contextmanager
def old_lock() -> Iterator[None]:
    """Stores opened meanwhile use the lock before, and extend their graph 256 rows at a time."""
    real = store.RWLock, graph._EXTEND_SLICE_MIN, graph._EXTEND_SLICE_MAX
    store.RWLock = WriterPreferringLock  # type: ignore[misc,assignment]
    graph._EXTEND_SLICE_MIN = graph._EXTEND_SLICE_MAX = 256
    try:
        yield
    finally:
        store.RWLock, graph._EXTEND_SLICE_MIN, graph._EXTEND_SLICE_MAX = real  # type: ignore[misc]


def adoption(data_dir: Path, queries: np.ndarray) -> tuple[float, int]:
    """(seconds from the rename of a graph file into place to the first answer served by it, queries
    answered meanwhile) for a running index that opened the store without one."""
    path = graph_path(data_dir / f"{STORE}.sqlite")
    aside = path.with_name(path.name + ".aside")
    path.rename(aside)
    index = EmbeddedIndex(data_dir)
    try:
        query_latency(index, queries, 0.5)  # serving exactly, as a server that has no graph yet
        assert index.stats(STORE).graph_rows == 0
        incoming = path.with_name(path.name + ".incoming")
        shutil.copyfile(aside, incoming)  # another process's save: written aside, then renamed
        saved = time.perf_counter()
        os.replace(incoming, path)
        answered = 0
        while True:
            index.knn(STORE, queries[answered % len(queries)], K, CALLER)
            answered += 1
            stats = index.stats(STORE)
            if stats.graph_adoptions and stats.last_plan == "hnsw":
                return time.perf_counter() - saved, answered
            if time.perf_counter() - saved > 120:
                raise SystemExit("the saved graph was never adopted")
    finally:
        index.close()
        aside.unlink()


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


def paced_latency(
    index: EmbeddedIndex, queries: np.ndarray, seconds: float, rate: float
) -> tuple[float, float, float, int]:
    """(p50, p99, max in ms, queries run): queries arrive every ``1 / rate`` s whatever came of the
    last, and each counts from its arrival, so a stall shows in every query that arrived during it
    (a closed loop would count it once). Queries that would arrive after twice ``seconds`` of
    wall time are not run (a backlog that long would only grow)."""
    times: list[float] = []
    start = time.perf_counter()
    for number in range(int(seconds * rate)):
        arrival = start + number / rate
        if time.perf_counter() > start + 2 * seconds:
            break
        wait = arrival - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        index.knn(STORE, queries[number % len(queries)], K, CALLER)
        times.append(time.perf_counter() - arrival)
    p50, p99 = percentiles(times)
    return p50 * 1e3, p99 * 1e3, max(times) * 1e3, len(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=10, help="single-document writes timed to visibility")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of queries per p50")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=20.0, help="queries per second while another process indexes")
    parser.add_argument(
        "--batch-interval",
        type=float,
        default=0.5,
        help="seconds between the writer's 1000-chunk batches (0: no pause)",
    )
    args = parser.parse_args()
    if args.rows < 20_000 or args.writes < 1 or args.seconds <= 0 or args.rate <= 0:
        # Below ~20,000 rows the 50 % caller is cheaper to serve exactly: no answer would come from a graph.
        parser.error("--rows must be at least 20000, --writes at least 1, --seconds and --rate positive")

    with tempfile.TemporaryDirectory(prefix="docqa-fresh-") as folder:
        data_dir = Path(folder) / "store"
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
        if not warm_how.endswith("plan hnsw"):
            # Adoption is timed to the first answer from the graph: there would be none to wait for.
            raise SystemExit(
                f"at {args.rows:,} rows the graph does not serve the 50 % caller ({warm_how}): more --rows"
            )
        print(f"fresh start, first answer:       saved graph {warm_first:7.2f} s | no graph file {cold_first:7.2f} s")
        print(
            f"fresh start, first graph answer: saved graph {warm_graph:7.2f} s ({warm_how})"
            f" | no graph file {cold_graph:7.2f} s ({cold_how}) | x {cold_graph / warm_graph:.1f}"
        )

        adoptions = [adoption(data_dir, corpus.queries) for _ in range(3)]
        delays = sorted(seconds for seconds, _ in adoptions)
        print(
            f"another process's graph save -> answered by it (of 3): {' / '.join(f'{d:.2f}' for d in delays)} s,"
            f" p50 {delays[1]:.2f} s ({[n for _, n in adoptions]} exact answers meanwhile)"
            f" | building its own {cold_graph:.2f} s | x {cold_graph / delays[1]:.1f}"
        )

        server = EmbeddedIndex(data_dir)
        query_latency(server, corpus.queries, min(1.0, args.seconds))  # warm up
        live = visibility(server, data_dir, args.writes, seed=1)
        idle = paced_latency(server, corpus.queries, args.seconds, args.rate)
        with full_reloads():
            reload = visibility(server, data_dir, args.writes, seed=2)
        server.close()
        live_p50, reload_p50 = float(np.median(live)), float(np.median(reload))
        print(
            f"write -> visible (p50 of {args.writes}):   change log {live_p50 * 1e3:7.1f} ms"
            f" | full reload {reload_p50 * 1e3:7.1f} ms | x {reload_p50 / live_p50:.1f}"
        )

        print(
            f"query latency, ms, from each query's arrival ({args.rate:g} a second): p50 / p99 / max (queries run),"
            " another process indexing:"
        )
        print(f"  {'idle':<44} {idle[0]:7.2f} / {idle[1]:8.2f} / {idle[2]:8.1f} ({idle[3]})")
        busy = {}
        for label, patch in (
            ("change log, phase-fair lock, ~10 ms slices", None),
            ("change log, lock before, 256-row slices", old_lock),
            ("full reloads", full_reloads),
        ):
            copy = Path(folder) / label.replace(" ", "_").replace(",", "").replace("~", "")
            shutil.copytree(data_dir, copy)  # the same store for every variant
            with patch() if patch is not None else contextlib.nullcontext():
                server = EmbeddedIndex(copy)
                query_latency(server, corpus.queries, min(1.0, args.seconds))  # warm up
                with writer(copy, "batches", args.batch_interval):
                    busy[label] = latency = paced_latency(server, corpus.queries, args.seconds, args.rate)
                stats = server.stats(STORE)
                server.close()
            p50, p99, worst, count = latency
            print(
                f"  {label:<44} {p50:7.2f} / {p99:8.2f} / {worst:8.1f} ({count}); {stats.catch_ups} catch-ups,"
                f" {stats.reloads} reloads, graph {stats.graph_rows:,} of {stats.rows + stats.tombstones:,} rows"
            )
            shutil.rmtree(copy)
        new, old = busy["change log, phase-fair lock, ~10 ms slices"], busy["change log, lock before, 256-row slices"]
        print(
            f"  lock before / phase-fair: p50 x {old[0] / new[0]:.2f}, p99 x {old[1] / new[1]:.1f},"
            f" max x {old[2] / new[2]:.1f}"
        )
    fields = ("p50_ms", "p99_ms", "max_ms", "queries")
    record(
        "fresh_server",
        {
            "rows": args.rows,
            "writes": args.writes,
            "seconds": args.seconds,
            "rate": args.rate,
            "fresh_start_s": {
                "saved graph": {"first_answer": warm_first, "first_graph_answer": warm_graph, "how": warm_how},
                "no graph file": {"first_answer": cold_first, "first_graph_answer": cold_graph, "how": cold_how},
            },
            "adoption_s": delays,
            "visible_p50_ms": {"change log": live_p50 * 1e3, "full reload": reload_p50 * 1e3},
            "latency_idle": dict(zip(fields, idle, strict=True)),
            "latency_while_indexing": {label: dict(zip(fields, busy[label], strict=True)) for label in busy},
        },
    )


if __name__ == "__main__":
    main()
