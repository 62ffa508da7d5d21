"""Indexing across workers: one `docqa index` process against N processes `--shard i/N` run at once.

    python bench/shards.py [--docs 40] [--workers 2] [--repeat 2] [--threads T]

Generates the deterministic Markdown corpus of ``bench/indexing.py``, indexes it
into a fresh data directory with one real `docqa index` process, then into
another with N processes `docqa index --shard i/N` started together against
the same embedded store, and prints each one's wall time (model loading
included: every worker loads its own) and chunks/s, the ratio N ÷ 1, and
whether both stores hold the same documents, chunks, texts and ACLs.

On one machine the workers share its cores (torch already uses them all in one
process), so the ratio says what sharding costs here; the gain comes from
workers on separate machines (the chart's Indexed Job) or GPUs.
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from indexing import make_corpus  # bench/indexing.py
from provenance import record  # bench/provenance.py

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

STORE = "bench"
_DONE = re.compile(r"(\d+) indexed \((\d+) chunks\)")


def index(data_dir: Path, corpus: Path, shards: list[str], threads: int | None) -> tuple[float, int]:
    """Seconds until the last process ends, and the chunks they indexed together."""
    env = {**os.environ, "DOCQA_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    env.pop("DOCQA_CONFIG", None)
    if threads:
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    command = [sys.executable, "-m", "service.api.cli", "index", str(corpus), "--store", STORE, "--quiet"]
    start = time.perf_counter()
    processes = [
        subprocess.Popen(
            command + (["--shard", shard] if shard else []), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for shard in shards or [""]
    ]
    chunks = 0
    for process in processes:
        out, err = process.communicate(timeout=900)
        if process.returncode != 0:
            raise SystemExit(f"docqa index failed ({process.returncode}): {err.decode(errors='replace')}")
        match = _DONE.search(out.decode())
        chunks += int(match.group(2)) if match else 0
    return time.perf_counter() - start, chunks


def contents(data_dir: Path) -> tuple[list[tuple[object, ...]], list[object], npt.NDArray[np.float32]]:
    """The store: the index's chunks (ids, documents, texts, ACLs), the catalog's documents, and the vectors."""
    with sqlite3.connect(data_dir / "index" / f"{STORE}.sqlite") as db:
        rows = db.execute(
            "SELECT chunk_id, document_id, text, acl_allow, acl_deny, vector FROM chunks ORDER BY chunk_id"
        ).fetchall()
    from service.persistence.sql_settings import SqlSettingsRepository

    repo = SqlSettingsRepository.from_url(f"sqlite:///{data_dir / 'settings.sqlite'}")
    # DocumentRecord compares all but when it was indexed: id, title, text, hash, origin, chunk count, ACL.
    documents = sorted(repo.list_documents(STORE), key=lambda d: d.id)
    repo.close()
    vectors = np.array([np.frombuffer(r[-1], dtype=np.float32) for r in rows])
    return [r[:-1] for r in rows], documents, vectors


def same_store(one: Path, many: Path) -> bool:
    """Equal rows and documents; vectors equal up to float rounding (a model call's batch, and so its padding,
    differs between one run and a shard, which moves the last bits)."""
    rows, documents, vectors = contents(one)
    other_rows, other_documents, other_vectors = contents(many)
    if rows != other_rows or documents != other_documents or vectors.shape != other_vectors.shape:
        return False
    return bool(len(vectors) == 0 or np.min(np.sum(vectors * other_vectors, axis=1)) > 0.9999)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=40, help="Markdown documents to generate (default 40)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each, alternating; the best counts")
    parser.add_argument("--workers", type=int, default=2, help="processes of the sharded run (default 2)")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch threads per worker of the sharded run (default: torch's own)"
    )
    args = parser.parse_args()
    if args.docs < 1 or args.repeat < 1 or not 2 <= args.workers <= 64:
        parser.error("--docs and --repeat must be at least 1, --workers between 2 and 64")

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        make_corpus(corpus, args.docs)
        shards = [f"{i}/{args.workers}" for i in range(args.workers)]
        one_s, many_s, one_chunks, many_chunks, same = [], [], 0, 0, True
        for run in range(args.repeat):  # alternating, so the machine's noise hits both
            one, many = Path(tmp) / f"one{run}", Path(tmp) / f"many{run}"
            seconds, one_chunks = index(one, corpus, [], None)
            one_s.append(seconds)
            seconds, many_chunks = index(many, corpus, shards, args.threads or None)
            many_s.append(seconds)
            same = same and many_chunks == one_chunks and same_store(one, many)
        best_one, best_many = min(one_s), min(many_s)
        print(
            f"corpus: {args.docs} Markdown documents, {one_chunks} chunks; "
            f"{os.cpu_count()} CPU cores; best of {args.repeat}"
        )
        print(f"1 process:           {best_one:6.1f} s  {one_chunks / best_one:6.1f} chunks/s  (model load included)")
        print(
            f"{args.workers} processes --shard: {best_many:6.1f} s  {many_chunks / best_many:6.1f} chunks/s  "
            f"ratio {best_one / best_many:.2f}× the single process"
        )
        print(f"same store (documents, chunk ids, texts, ACLs; vectors to cosine 0.9999): {'yes' if same else 'NO'}")
        if not same:
            raise SystemExit("the sharded store differs from the single run's")
    record(
        "shards",
        {
            "docs": args.docs,
            "chunks": one_chunks,
            "workers": args.workers,
            "threads": args.threads or None,
            "repeat": args.repeat,
            "one_process_s": best_one,
            "sharded_s": best_many,
            "ratio": best_one / best_many,
            "same_store": same,
        },
    )


if __name__ == "__main__":
    main()
