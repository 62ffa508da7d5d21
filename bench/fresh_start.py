"""A fresh process opening a large store: from the rows saved with its graph, against reading every row.

    python bench/fresh_start.py --rows 1000000 [--runs 4] [--data-dir DIR]

Builds ``bench/retrieval.py``'s corpus (sigma 0.6) into ``--data-dir`` unless a store is there already,
with its graph built and saved. Then, alternating, each in a new process, timed from opening the index to
its first answer served by the graph (k=60 unless ``--k``, the 50 % caller):

* saved rows -- the graph file as ``docqa`` saves it now: the rows come from the file (memory-mapped,
  checksummed, decoded while faiss reads the graph) and are caught up through the store's change log;
* baseline   -- the same graph saved without its rows, as before: every row read out of SQLite and laid
  out along the graph (the graph read as before too, apart from the checksum, now xxh3 instead of sha256).

Figures, not asserts: medians of ``--runs`` each, and the ratio. The first run of each pays for memory
the machine has not touched yet, so the medians are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from provenance import record  # bench/provenance.py  # noqa: E402
from retrieval import STORE  # bench/retrieval.py  # noqa: E402

CHILD = textwrap.dedent("""
    import json, sys, time
    started = time.perf_counter()
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, "bench")
    from retrieval import CALLERS, STORE
    from indexer.index.embedded.index import EmbeddedIndex
    from indexer.index.filters import acl_filter
    data_dir, k = Path(sys.argv[1]), int(sys.argv[2])
    query = np.load(data_dir / "queries.npy")[0]
    opened = time.perf_counter()
    index = EmbeddedIndex(data_dir)
    index.knn(STORE, query, k, acl_filter(CALLERS["50%"]))
    answered = time.perf_counter()
    stats = index.stats(STORE)
    print(json.dumps({"seconds": answered - opened, "imports": opened - started, "plan": stats.last_plan,
                      "rows_loaded": stats.rows_loaded, "graph_loaded": stats.graph_loaded, "rows": stats.rows}))
    index.close()
""")

BUILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, "bench")
    from retrieval import STORE, load, make_corpus
    from indexer.index.embedded.index import EmbeddedIndex
    rows, data_dir = int(sys.argv[1]), Path(sys.argv[2])
    started = time.perf_counter()
    corpus = make_corpus(rows, 200, 0.6, "decaying", 0)
    index = EmbeddedIndex(data_dir, background=False)
    load(index, corpus, 0)
    written = time.perf_counter()
    index.prepare(STORE)
    print(f"built: rows written in {written - started:.1f} s, graph built and saved in"
          f" {time.perf_counter() - written:.1f} s", flush=True)
    index.close()
    np.save(data_dir / "queries.npy", corpus.queries)
""")

WITHOUT_ROWS = textwrap.dedent("""
    import sys
    from pathlib import Path
    from indexer.index.embedded import graph_file
    from indexer.index.embedded.sqlite import ChunkTable
    store, out = Path(sys.argv[1]), Path(sys.argv[2])
    table = ChunkTable.open(store)
    saved = graph_file.load(graph_file.graph_path(store), table.store_uuid(), table.dimension, with_rows=False)
    graph_file.save(out, table.store_uuid(), saved.graph, saved.graph.serialize(), saved.node_seqs)
""")


def run(code: str, *args: str) -> str:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=4, help="fresh processes per variant")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/docqa-fresh-start"))
    parser.add_argument(
        "--k",
        type=int,
        default=60,
        help="rows the first query asks for (default 60, the query path's; below ~100k"
        " rows only a smaller k is served by the graph)",
    )
    args = parser.parse_args()
    if args.rows < 1 or args.runs < 1 or args.k < 1:
        parser.error("--rows, --runs and --k must be at least 1")
    store = args.data_dir / f"{STORE}.sqlite"
    path = store.with_name(store.name + ".hnsw")
    if not path.exists():
        shutil.rmtree(args.data_dir, ignore_errors=True)
        print(run(BUILD, str(args.rows), str(args.data_dir)), end="")
    with_rows, without = path.with_name("with-rows.hnsw"), path.with_name("without-rows.hnsw")
    shutil.copy(path, with_rows)
    run(WITHOUT_ROWS, str(store), str(without))
    results: dict[str, list[float]] = {"saved rows": [], "baseline": []}
    for _ in range(args.runs):
        for name, source in (("saved rows", with_rows), ("baseline", without)):
            shutil.copy(source, path)
            time.sleep(0.5)
            figures = json.loads(run(CHILD, str(args.data_dir), str(args.k)))
            if figures["plan"] != "hnsw" or not figures["graph_loaded"]:
                raise SystemExit(f"the first answer did not come from the saved graph ({figures}): more --rows")
            if figures["rows_loaded"] != (name == "saved rows"):
                raise SystemExit(f"{name}: rows loaded from the graph file: {figures['rows_loaded']} ({figures})")
            results[name].append(figures["seconds"])
            print(f"{name:10} {figures['seconds']:6.2f} s to the first graph answer ({figures['rows']} rows)")
    shutil.copy(with_rows, path)
    new, old = (statistics.median(results[name]) for name in ("saved rows", "baseline"))
    print(f"median: saved rows {new:.2f} s, baseline {old:.2f} s, x {old / new:.1f}")
    record(
        "fresh_start",
        {
            "rows": figures["rows"],
            "k": args.k,
            "runs": args.runs,
            "median_s": {"saved rows": new, "baseline": old},
            "seconds": results,
        },
    )


if __name__ == "__main__":
    main()
