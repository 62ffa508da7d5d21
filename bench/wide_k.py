"""The engine's usual vector search (k=60) on the HNSW graph: efSearch scaled linearly from k=10 vs calibrated at k=60.

    python bench/wide_k.py [--rows 100000] [--queries 200] [--k 60]

A vector question asks the index for 60 rows (30 fusion candidates, twice as many fetched in case the
access check drops some). A graph is calibrated at k=10; before, efSearch for k=60 was the k=10 value
times 6. Now the calibration also measures k=60 (``EfPolicy.wide``) and efSearch is interpolated between
the two. On one graph built by ``EmbeddedIndex.prepare`` over ``bench/retrieval.py``'s corpus (clustered
384-d vectors, decaying spectrum), for a caller reading every row and the retrieval bench's 50 %, 5 % and
0.5 % callers, it prints the p50/p99 of ``EmbeddedIndex.knn`` and recall@k against exact search with the
baseline policy (``wide`` dropped) and the calibrated one, alternating per query, and the ratio of p50s.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py
from retrieval import CALLERS, STORE, load, make_corpus

from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import Filter, acl_filter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.rows < 2048 or args.queries < 1 or args.k < 1:
        parser.error("--rows must be at least 2048 (below, no graph is built), --queries and --k at least 1")
    corpus = make_corpus(args.rows, args.queries, 0.7, "decaying", args.seed)
    index = EmbeddedIndex(None)
    load(index, corpus, args.seed)
    started = time.perf_counter()
    index.prepare(STORE)
    store = index._open(STORE)
    graph = store.keeper.graph_for(store.rows)
    if graph is None or graph.policy is None:
        raise SystemExit("the graph missed its recall target: nothing to compare")
    calibrated = graph.policy
    policies = {"linear": dataclasses.replace(calibrated, wide=None), "calibrated": calibrated}
    print(f"# {args.rows:,} rows, k={args.k}: build + calibration {time.perf_counter() - started:.1f} s; {calibrated}")
    callers: dict[str, Filter | None] = {"100%": None, **{name: acl_filter(p) for name, p in CALLERS.items()}}
    print(
        f"{'caller':>6} | {'ef':>5} {'linear p50':>10} {'p99':>7} {'rec':>6} | {'ef':>5} {'calibrated p50':>14} "
        f"{'p99':>7} {'rec':>6} | {'p50 x':>6}"
    )
    figures: dict[str, object] = {"rows": args.rows, "queries": args.queries, "k": args.k, "policy": str(calibrated)}
    for name, flt in callers.items():
        truths = [{h.chunk.chunk_id for h in index.exact(STORE, q, args.k, flt)} for q in corpus.queries]
        times: dict[str, list[float]] = {label: [] for label in policies}
        found = dict.fromkeys(policies, 0)
        plans: dict[str, set[str]] = {label: set() for label in policies}
        for query, truth in zip(corpus.queries, truths, strict=True):
            for label, policy in policies.items():  # alternating, so both see the same machine
                graph.policy = policy
                t0 = time.perf_counter()
                hits = index.knn(STORE, query, args.k, flt)
                times[label].append(time.perf_counter() - t0)
                found[label] += len(truth & {h.chunk.chunk_id for h in hits})
                plans[label].add(index.stats(STORE).last_plan or "?")
        graph.policy = calibrated
        allowed = index.count(STORE, flt)
        share = allowed / args.rows
        cells, p50s = [], {}
        row: dict[str, object] = {}
        for label, policy in policies.items():
            p50, p99 = percentiles(times[label])
            p50s[label] = p50
            ef = policy.ef(args.k, share)
            plan = "/".join(sorted(plans[label]))
            rec = found[label] / (len(truths) * args.k)
            cells.append(f"{ef or '-':>5} {p50 * 1e3:10.2f} {p99 * 1e3:7.2f} {rec:6.3f}")
            cells[-1] += f" {plan}" if plan != "hnsw" else ""
            row[label] = {"ef": ef, "p50_ms": p50 * 1e3, "p99_ms": p99 * 1e3, "recall": rec, "plans": plan}
        figures[name] = {**row, "x_p50": p50s["linear"] / p50s["calibrated"]}
        print(f"{name:>6} | {cells[0]} | {cells[1]} | {p50s['linear'] / p50s['calibrated']:6.2f}", flush=True)
    index.close()
    record("wide_k", figures)


if __name__ == "__main__":
    main()
