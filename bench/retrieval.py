"""Filtered top-10 retrieval: DocQA's embedded index against its two obvious alternatives.

    python bench/retrieval.py [--sizes 100000,1000000] [--queries 200] [--spectrum flat]

Synthetic corpus: 384-d L2-normalised vectors around 1000 gaussian cluster
centres, 10 chunks per document, every document's ACL allowing a few of 200
groups. The within-cluster noise has a decaying spectrum (variance of axis i
~ 1/i, effective dimension ~26, like sentence embeddings) or, with
``--spectrum flat``, is isotropic: a harder case, where a point's neighbours
are nearly equidistant and graph indexes lose recall as clusters grow.

Three callers read 50 %, 5 % and 0.5 % of the chunks. For each size and
caller it prints p50/p99 latency, recall@10 against exact search and the number
of under-filled answers (fewer than 10 hits although at least 10 are readable) of

* DocQA  -- ``EmbeddedIndex.knn`` in memory, the whole query path the service
            uses: ACL filter -> allowed rows -> plan -> search -> chunk records;
* exact  -- numpy over the allowed rows (gather, matmul, argpartition), given
            the allowed rows for free; it is the ground truth;
* hnsw16 -- faiss HNSW + IDSelectorBitmap at the default efSearch (16), on the
            same graph DocQA built, given the bitmap for free.

``x`` columns are that method's p50 divided by DocQA's. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.index.embedded.hnsw import EF_CONSTRUCTION, HnswGraph, M
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter
from indexer.index.port import ChunkRecord, StoreSpec

DIM = 384
CLUSTERS = 1000
GROUPS = 200
PER_DOC = 10
K = 10
WARMUP = 5
STORE = "bench"
# Callers: the groups each holds, and the share of documents whose primary group they hold.
PRIMARY_SHARE = {"group:g0": 0.005, "group:g1": 0.045, "group:g2": 0.45}
CALLERS = {
    "50%": ["user:reader", "group:g0", "group:g1", "group:g2"],
    "5%": ["user:reader", "group:g0", "group:g1"],
    "0.5%": ["user:reader", "group:g0"],
}


@dataclass
class Corpus:
    vectors: npt.NDArray[np.float32]
    primary: npt.NDArray[np.int64]  # per document: its primary group
    queries: npt.NDArray[np.float32]


def make_corpus(rows: int, queries: int, sigma: float, spectrum: str, seed: int) -> Corpus:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CLUSTERS, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    variances = 1.0 / np.arange(1, DIM + 1) if spectrum == "decaying" else np.ones(DIM)
    scale = (sigma * np.sqrt(variances / variances.sum())).astype(np.float32)

    def sample(count: int) -> npt.NDArray[np.float32]:
        out = np.empty((count, DIM), np.float32)
        for start in range(0, count, 65536):
            stop = min(count, start + 65536)
            labels = rng.integers(0, CLUSTERS, stop - start)
            noise = rng.standard_normal((stop - start, DIM), dtype=np.float32)
            out[start:stop] = centres[labels] + noise * scale
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    documents = rows // PER_DOC
    shares = np.array([*PRIMARY_SHARE.values(), 1.0 - sum(PRIMARY_SHARE.values())])
    kind = rng.choice(len(shares), size=documents, p=shares)
    other = rng.integers(3, GROUPS, documents)  # groups no caller holds
    primary = np.where(kind < 3, kind, other)
    return Corpus(sample(rows), primary, sample(queries))


def document_acl(primary: int, rng: np.random.Generator) -> Acl:
    extra = [f"group:g{g}" for g in rng.integers(3, GROUPS, 2)]
    return Acl.of([f"group:g{primary}", *extra])


def load(index: EmbeddedIndex, corpus: Corpus, seed: int) -> None:
    rng = np.random.default_rng(seed + 1)
    index.ensure(StoreSpec(STORE, DIM))
    batch: list[ChunkRecord] = []
    for doc, primary in enumerate(corpus.primary.tolist()):
        acl = document_acl(primary, rng)
        for ordinal in range(PER_DOC):
            row = doc * PER_DOC + ordinal
            batch.append(
                ChunkRecord(
                    f"doc{doc:07d}#{ordinal}",
                    f"doc{doc:07d}",
                    ordinal,
                    f"chunk {row}",
                    f"Document {doc}",
                    f"file:///doc{doc}",
                    (),
                    0,
                    0,
                    acl,
                    vector=corpus.vectors[row],
                )
            )
        if len(batch) >= 20_000:
            index.upsert(STORE, batch)
            batch = []
    index.upsert(STORE, batch)


def run_size(
    rows: int, queries: int, sigma: float, spectrum: str, seed: int
) -> tuple[list[str], dict[str, dict[str, object]]]:
    """The table's lines for ``rows`` chunks, and per caller the figures they show."""
    started = time.perf_counter()
    corpus = make_corpus(rows, queries, sigma, spectrum, seed)
    generated = time.perf_counter()
    index = EmbeddedIndex(None)
    load(index, corpus, seed)
    loaded = time.perf_counter()
    index.prepare(STORE)
    built = time.perf_counter()
    print(
        f"# {rows:,} chunks: generate {generated - started:.1f} s, load {loaded - generated:.1f} s,"
        f" HNSW build (M={M}, efConstruction={EF_CONSTRUCTION}) + calibration"
        f" {built - loaded:.1f} s -> {index.stats(STORE).ef_policy}",
        flush=True,
    )
    # The faiss baseline searches DocQA's own graph (one build, not two) unless
    # calibration found it short of the recall target and DocQA dropped it.
    store = index._open(STORE)
    graph = store.keeper.graph_for(store.rows)
    if graph is None:
        graph = HnswGraph(DIM)
        graph.add(corpus.vectors)
        print(f"# baseline graph built separately: {time.perf_counter() - built:.1f} s", flush=True)
    assert graph.ntotal == rows
    faiss_index = graph._index
    lines = []
    figures: dict[str, dict[str, object]] = {}
    for label, principals in CALLERS.items():
        readable_docs = np.isin(corpus.primary, [int(p[7:]) for p in principals[1:]])
        allowed = np.flatnonzero(np.repeat(readable_docs, PER_DOC)).astype(np.int64)
        flt = acl_filter(principals)
        assert index.count(STORE, flt) == len(allowed)
        mask = np.zeros(rows, np.bool_)
        mask[allowed] = True
        bitmap = np.packbits(mask, bitorder="little")
        # One pass per method, so that no method runs in another's wake (BLAS
        # threads spinning after a matmul slow whatever runs next on 2 cores).
        times: dict[str, list[float]] = {"docqa": [], "exact": [], "hnsw": []}
        results: dict[str, list[set[int]]] = {"docqa": [], "exact": [], "hnsw": []}
        plans: Counter[str] = Counter()
        for query in corpus.queries[:WARMUP]:  # untimed: first touches of the postings, caches
            index.knn(STORE, query, K, flt)
            _ = corpus.vectors[allowed] @ query
        for query in corpus.queries:
            t0 = time.perf_counter()
            scores = corpus.vectors[allowed] @ query
            top = np.argpartition(-scores, K)[:K]
            best = allowed[top[np.argsort(-scores[top])]]
            times["exact"].append(time.perf_counter() - t0)
            results["exact"].append(set(best.tolist()))
        for query in corpus.queries:
            t0 = time.perf_counter()
            selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
            params = faiss.SearchParametersHNSW(sel=selector, efSearch=16)  # type: ignore[attr-defined]
            _, labels = faiss_index.search(query.reshape(1, -1), K, params=params)
            times["hnsw"].append(time.perf_counter() - t0)
            results["hnsw"].append(set(labels[0][labels[0] >= 0].tolist()))
        for query in corpus.queries:
            t0 = time.perf_counter()
            hits = index.knn(STORE, query, K, flt)
            times["docqa"].append(time.perf_counter() - t0)
            plans[index.stats(STORE).last_plan or "?"] += 1
            results["docqa"].append({int(h.chunk.text.split()[1]) for h in hits})
        found = {
            name: sum(len(got & truth) for got, truth in zip(results[name], results["exact"], strict=True))
            for name in ("docqa", "hnsw")
        }
        under = {name: sum(len(got) < min(K, len(allowed)) for got in results[name]) for name in ("docqa", "hnsw")}
        docqa_p50, docqa_p99 = percentiles(times["docqa"])
        exact_p50, exact_p99 = percentiles(times["exact"])
        hnsw_p50, hnsw_p99 = percentiles(times["hnsw"])
        total = K * queries
        lines.append(
            f"{rows:>9,} {label:>5} {len(allowed) / rows:6.2%} | "
            f"{docqa_p50 * 1e3:7.2f} {docqa_p99 * 1e3:7.2f} {found['docqa'] / total:6.3f} "
            f"{under['docqa']:5d} {'/'.join(f'{p}:{c}' for p, c in sorted(plans.items())):<18}| "
            f"{exact_p50 * 1e3:7.2f} {exact_p99 * 1e3:7.2f} {exact_p50 / docqa_p50:6.1f}x | "
            f"{hnsw_p50 * 1e3:7.2f} {hnsw_p99 * 1e3:7.2f} {found['hnsw'] / total:6.3f} "
            f"{under['hnsw']:5d} {hnsw_p50 / docqa_p50:6.2f}x"
        )
        print(lines[-1], flush=True)
        figures[label] = {
            "readable": len(allowed) / rows,
            "docqa": {
                "p50_ms": docqa_p50 * 1e3,
                "p99_ms": docqa_p99 * 1e3,
                "recall@10": found["docqa"] / total,
                "under": under["docqa"],
                "plans": dict(plans),
            },
            "exact": {"p50_ms": exact_p50 * 1e3, "p99_ms": exact_p99 * 1e3},
            "hnsw16": {
                "p50_ms": hnsw_p50 * 1e3,
                "p99_ms": hnsw_p99 * 1e3,
                "recall@10": found["hnsw"] / total,
                "under": under["hnsw"],
            },
        }
    index.close()
    return lines, figures


HEADER = (
    f"{'chunks':>9} {'sel':>5} {'read':>6} | {'DocQA p50':>7} {'p99':>7} {'rec@10':>6} {'under':>5}"
    f" {'plans':<18}| {'exact p50':>7} {'p99':>7} {'x':>7} | {'hnsw16 p50':>7} {'p99':>7}"
    f" {'rec@10':>6} {'under':>5} {'x':>7}"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated chunk counts")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sigma", type=float, default=0.7, help="cluster spread (noise norm)")
    parser.add_argument("--spectrum", choices=("decaying", "flat"), default="decaying")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if not sizes or min(sizes) < 2 * PER_DOC or args.queries < 1:
        parser.error(f"--sizes must be at least {2 * PER_DOC} chunks each, --queries at least 1")
    print(
        f"# {DIM}-d, {CLUSTERS} clusters (sigma {args.sigma}, {args.spectrum} spectrum),"
        f" {GROUPS} groups, top-{K},"
        f" {args.queries} queries; times in ms; faiss {faiss.__version__},"
        f" {faiss.omp_get_max_threads()} threads",
        flush=True,
    )
    lines = []
    figures: dict[str, object] = {"queries": args.queries, "sigma": args.sigma, "spectrum": args.spectrum}
    for rows in sizes:
        found, figures[f"{rows} chunks"] = run_size(rows, args.queries, args.sigma, args.spectrum, args.seed)
        lines += found
    print()
    print(HEADER)
    print("\n".join(lines))
    record("retrieval", figures)


if __name__ == "__main__":
    main()
