"""Where Milvus Lite's filtered-search time goes: the vector index or the ACL filter.

    pip install -e .[bench]
    python bench/milvus_probe.py [--rows 20000] [--index-types AUTOINDEX,FLAT,HNSW] [--repeats 5]

bench/peers.py measured Milvus Lite at seconds per query on 100k chunks. This
probe separates the two suspects on one collection per vector index type
(random normalised 384-d vectors, each row allowing 3 of 200 groups):

* the vector index: AUTOINDEX, FLAT and HNSW (M 16, efConstruction 120), each
  also searched with no filter at all (the baseline of the row);
* the filter: ``array_contains_any`` / ``array_contains`` on an ``ARRAY<VARCHAR>``
  field (what peers.py uses), ``json_contains_any`` on a JSON field, and, as the
  cheap references, scalar filters: the primary key (``id < 500``) and ``in`` on
  a VARCHAR holding one principal per row (which cannot express an ACL list).

It also asks Milvus Lite for an INVERTED scalar index on the ARRAY field (what a
Milvus server offers to make such filters cheap) and reports its answer.
Prints median ms per search and the ratio to the unfiltered search on the same
collection. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from provenance import record  # bench/provenance.py

DIM = 384
GROUPS = 200


def build(client: Any, name: str, index_type: str, acl_type: str, vectors: Any, acls: list[list[str]]) -> float:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DIM)
    schema.add_field("owner", DataType.VARCHAR, max_length=64)  # one principal per row: a scalar, not an ACL
    if acl_type == "array":
        schema.add_field("acl", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=16, max_length=64)
    else:
        schema.add_field("acl", DataType.JSON)
    params = client.prepare_index_params()
    extra = {"params": {"M": 16, "efConstruction": 120}} if index_type == "HNSW" else {}
    params.add_index(field_name="vector", index_type=index_type, metric_type="COSINE", **extra)
    started = time.perf_counter()
    client.create_collection(name, schema=schema, index_params=params)
    for start in range(0, len(vectors), 5000):
        stop = min(len(vectors), start + 5000)
        rows = [
            {"id": i, "vector": vectors[i].tolist(), "owner": acls[i][0], "acl": acls[i]} for i in range(start, stop)
        ]
        client.insert(name, rows)
    client.flush(name)
    client.load_collection(name)
    return time.perf_counter() - started


def timed(client: Any, name: str, queries: Any, expr: str) -> tuple[float, int]:
    times = []
    hits = 0
    for q in queries:
        t0 = time.perf_counter()
        result = client.search(name, data=[q.tolist()], limit=10, filter=expr, output_fields=[])
        times.append(time.perf_counter() - t0)
        hits = len(result[0])
    return statistics.median(times) * 1e3, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--index-types", default="AUTOINDEX,FLAT,HNSW")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    types = [t for t in args.index_types.split(",") if t]
    if args.rows < 10 or args.repeats < 1 or not types:
        parser.error("--rows must be at least 10, --repeats at least 1, --index-types not empty")
    try:
        import pymilvus
        from pymilvus import MilvusClient
    except ImportError as exc:
        sys.exit(f"Milvus Lite is not installed ({exc}): pip install -e .[bench]")

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((args.rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    acls = [[f"group:g{g}" for g in rng.choice(GROUPS, 3, replace=False)] for _ in range(args.rows)]
    queries = vectors[: args.repeats]
    many = ", ".join(f'"group:g{g}"' for g in range(100))
    filters = {
        "none": ("", "array"),
        "id < 500 (scalar)": ("id < 500", "array"),
        "owner in (1 group) (scalar)": ('owner in ["group:g1"]', "array"),
        "owner in (100 groups) (scalar)": (f"owner in [{many}]", "array"),
        "array_contains (1 group)": ('array_contains(acl, "group:g1")', "array"),
        "array_contains_any (1 group)": ('array_contains_any(acl, ["group:g1"])', "array"),
        "array_contains_any (100 groups)": (f"array_contains_any(acl, [{many}])", "array"),
        "json_contains_any (1 group)": ('json_contains_any(acl, ["group:g1"])', "json"),
        "json_contains_any (100 groups)": (f"json_contains_any(acl, [{many}])", "json"),
    }
    print(f"# pymilvus {pymilvus.__version__}, Milvus Lite, {args.rows:,} rows, median of {args.repeats} searches")
    figures: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "pymilvus": pymilvus.__version__}
    with tempfile.TemporaryDirectory(prefix="bench-milvus-probe-") as tmp:
        client = MilvusClient(str(Path(tmp) / "probe.db"))
        try:
            build(client, "inverted_probe", "FLAT", "array", vectors[:10], acls[:10])
            client.release_collection("inverted_probe")
            params = client.prepare_index_params()
            params.add_index(field_name="acl", index_type="INVERTED")
            client.create_index("inverted_probe", params)
            print("# INVERTED index on ARRAY<VARCHAR>: accepted")
            figures["inverted_index_on_array"] = "accepted"
        except Exception as exc:  # Milvus Lite answers with a MilvusException
            print(f"# INVERTED index on ARRAY<VARCHAR>: refused ({str(exc).strip()[:160]})")
            figures["inverted_index_on_array"] = f"refused: {str(exc).strip()[:160]}"

        print("| vector index | filter | p50 ms | x unfiltered | hits |")
        print("| --- | --- | --- | --- | --- |")
        for index_type in types:
            built = {}
            for acl_type in ("array", "json"):
                name = f"c_{index_type.lower()}_{acl_type}"
                seconds = build(client, name, index_type, acl_type, vectors, acls)
                built[acl_type] = name
                print(f"# {index_type} with {acl_type} acl built in {seconds:.1f} s")
            base, _ = timed(client, built["array"], queries, "")
            for label, (expr, acl_type) in filters.items():
                ms, hits = timed(client, built[acl_type], queries, expr)
                print(f"| {index_type} | {label} | {ms:.1f} | {ms / base:.1f}× | {hits} |", flush=True)
                figures[f"{index_type}, {label}"] = {"p50_ms": ms, "x_unfiltered": ms / base, "hits": hits}
        client.close()
    record("milvus_probe", figures)


if __name__ == "__main__":
    main()
