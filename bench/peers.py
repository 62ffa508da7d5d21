"""Filtered top-10 retrieval side by side: DocQA against the stores people use for this job.

    pip install -e .[bench]
    python bench/peers.py [--sizes 100000] [--queries 100] [--systems docqa,exact,chroma,milvus-lite,qdrant-local]

The corpus and the ACLs are bench/retrieval.py's (``make_corpus``, ``document_acl``,
``CALLERS``: 384-d clustered normalised vectors, 10 chunks per document, each
document allowing 3 of 200 groups; callers reading 50 %, 5 % and 0.5 %). Each
system (see bench/peer_adapters.py for how each filters) runs in its own
subprocess, so that its memory is measured alone (RSS of the process and its
children after the build minus before it) and a crash or a hang costs one cell.

For each system, size and selectivity: build time, memory, p50/p99 latency,
recall@10 against exact search over the allowed rows, and "under" = queries that
returned fewer than 10 hits although 10 readable chunks existed. A system gets
at most ``--budget-s`` seconds of queries per selectivity (the number it ran is
reported) and ``--timeout-s`` in all; one that fails or times out is reported so,
not left out. ``x`` = the system's p50 divided by DocQA's in the same run.
Figures, not asserts; JSON under bench/results/peers.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import retrieval  # noqa: E402  (bench/retrieval.py: corpus and ACL generation)
from figures import percentiles  # noqa: E402  (bench/figures.py)
from provenance import record  # noqa: E402  (bench/provenance.py)

K = retrieval.K
WARMUP = 3
SYSTEMS = ["docqa", "exact", "chroma", "milvus-lite", "qdrant-local"]


def tree_rss() -> int:
    """Resident bytes of this process and all its descendants (Linux /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    mine = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return sum(rss.get(pid, 0) for pid in mine)


def child(system: str, rows: int, queries: int, budget: float, seed: int) -> dict[str, Any]:
    from peer_adapters import ADAPTERS, Exact

    corpus = retrieval.make_corpus(rows, queries, 0.7, "decaying", seed)
    rng = np.random.default_rng(seed + 1)  # the same sequence retrieval.load draws, so DocQA's ACLs match
    doc_acls = [sorted(retrieval.document_acl(p, rng).allow) for p in corpus.primary.tolist()]
    acls = [doc_acls[row // retrieval.PER_DOC] for row in range(rows)]
    truth_index = Exact()
    truth_index.build(corpus.vectors, acls, corpus, seed)
    truths = {
        label: [truth_index.search(q, K, principals) for q in corpus.queries]
        for label, principals in retrieval.CALLERS.items()
    }
    out: dict[str, Any] = {"system": system, "rows": rows}
    adapter = ADAPTERS[system]()
    before = tree_rss()
    started = time.perf_counter()
    try:
        adapter.build(corpus.vectors, acls, corpus, seed)
    except Exception as exc:
        out["status"] = f"build failed: {type(exc).__name__}: {str(exc)[:300]}"
        out["traceback"] = traceback.format_exc()[-2000:]
        return out
    out["build_s"] = time.perf_counter() - started
    out["memory_mb"] = (tree_rss() - before) / 2**20
    out["notes"] = adapter.notes
    out["status"] = "ok"
    out["selectivity"] = {}
    for label, principals in retrieval.CALLERS.items():
        readable = len(truth_index.allowed(principals))
        cell: dict[str, Any] = {"readable": readable}
        try:
            warm_until = time.perf_counter() + budget / 10  # a slow system gets fewer warm-up queries
            for q in corpus.queries[:WARMUP]:
                adapter.search(q, K, principals)
                if time.perf_counter() > warm_until:
                    break
            times: list[float] = []
            found = under = 0
            deadline = time.perf_counter() + budget
            for q, truth in zip(corpus.queries, truths[label], strict=True):
                t0 = time.perf_counter()
                got = adapter.search(q, K, principals)
                times.append(time.perf_counter() - t0)
                found += len(set(got[:K]) & set(truth))
                under += len(got) < min(K, readable)
                if time.perf_counter() > deadline:
                    break
            n = len(times)
            p50, p99 = percentiles(times)
            cell.update(
                queries=n,
                p50_ms=p50 * 1e3,
                p99_ms=p99 * 1e3,
                recall=found / (K * n),
                under=under,
                status="ok" if n == queries else f"budget: {n} of {queries} queries in {budget:.0f} s",
            )
        except Exception as exc:
            cell["status"] = f"search failed: {type(exc).__name__}: {str(exc)[:300]}"
        out["selectivity"][label] = cell
        print(f"#   {system} {rows:,} {label}: {cell}", file=sys.stderr, flush=True)
    with contextlib.suppress(Exception):
        adapter.close()
    return out


def run_child(system: str, rows: int, args: argparse.Namespace) -> dict[str, Any]:
    command = [
        sys.executable, __file__, "--child", system, "--sizes", str(rows), "--queries", str(args.queries),
        "--budget-s", str(args.budget_s), "--seed", str(args.seed),
    ]  # fmt: skip
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        status = f"not run: timeout after {args.timeout_s} s"
        return {"system": system, "rows": rows, "status": status, "log": err[-1500:]}
    sys.stderr.write(done.stderr[-3000:] if done.returncode else "")
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            result["wall_s"] = time.perf_counter() - started
            return result
    return {
        "system": system,
        "rows": rows,
        "status": f"crashed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:] or ''}",
    }


def fmt_rows(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else f"{rows // 1000}k"


def table(results: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| chunks | system | build s | memory MB | readable | p50 / p99 ms | x DocQA p50 | recall@10 | under"
        " | queries |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    docqa = {
        (r["rows"], label): c
        for r in results
        if r["system"] == "docqa"
        for label, c in r.get("selectivity", {}).items()
    }
    for r in results:
        size = fmt_rows(r["rows"])
        if r.get("status") != "ok":
            lines.append(f"| {size} | {r['system']} | {r['status']} | | | | | | | |")
            continue
        for label, c in r["selectivity"].items():
            if "p50_ms" not in c:
                lines.append(
                    f"| {size} | {r['system']} | {r['build_s']:.1f} | {r['memory_mb']:.0f} | {label}"
                    f" | {c['status']} | | | | |"
                )
                continue
            base = docqa.get((r["rows"], label), {}).get("p50_ms")
            ratio = f"{c['p50_ms'] / base:.1f}×" if base else "–"
            lines.append(
                f"| {size} | {r['system']} | {r['build_s']:.1f} | {r['memory_mb']:.0f} | {label} | "
                f"{c['p50_ms']:.2f} / {c['p99_ms']:.2f} | {ratio} | {c['recall']:.3f} | {c['under']} | "
                f"{c['queries']}{'' if c['status'] == 'ok' else ' (budget)'} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated chunk counts, e.g. 100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--budget-s", type=float, default=60.0, help="query seconds per system and selectivity")
    parser.add_argument("--timeout-s", type=int, default=900, help="seconds per system and size, build included")
    parser.add_argument(
        "--skip",
        default="",
        help="system@size[=why] cells not to run, reported with the reason, e.g. 'qdrant-local@1000000=memory: ...'",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "peers.json"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.child:
        print(json.dumps(child(args.child, sizes[0], args.queries, args.budget_s, args.seed)), flush=True)
        return
    systems = [s for s in args.systems.split(",") if s]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown or not sizes or min(sizes) < retrieval.PER_DOC or args.queries < 1:
        parser.error(
            f"--systems from {', '.join(SYSTEMS)} (unknown: {', '.join(unknown) or 'none'}),"
            f" --sizes at least {retrieval.PER_DOC} each, --queries at least 1"
        )
    skip = dict([*cell.split("=", 1), "time"][:2] for cell in args.skip.split(",") if cell)
    print(
        f"# {retrieval.DIM}-d, top-{K}, {args.queries} queries, {os.cpu_count()} CPUs; one subprocess per cell",
        flush=True,
    )
    results: list[dict[str, Any]] = []
    for rows in sizes:
        for system in systems:
            why = skip.get(f"{system}@{rows}")
            if why is not None:
                results.append({"system": system, "rows": rows, "status": f"not run: {why}"})
                continue
            print(f"# {system} at {rows:,} ...", flush=True)
            results.append(run_child(system, rows, args))
            print(f"#   {results[-1].get('status')} ({results[-1].get('wall_s', 0):.0f} s)", flush=True)
    print()
    print("\n".join(table(results)))
    for r in results:
        if r.get("notes"):
            print(f"# {r['system']}: {r['notes']}")
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(
        json.dumps(
            {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(), "queries": args.queries, "results": results},
            indent=2,
        )
    )
    print(f"# written {args.json}")
    kept = [{k: v for k, v in r.items() if k not in ("traceback", "log")} for r in results]  # the JSON has them
    record("peers", {"queries": args.queries, "budget_s": args.budget_s, "results": kept})


if __name__ == "__main__":
    main()
