"""One small adapter per system for bench/peers.py, each filtering by an ACL list the way its documentation says.

Every adapter has ``build(vectors, acls)`` (row i has ``acls[i]``, the list of
principals allowed to read it), ``search(vector, k, principals) -> list[int]``
(row numbers, best first) and ``close()``. Peers are imported here only, inside
bench/, never by the service (``pip install -e .[bench]``).

* DocQA  -- ``EmbeddedIndex(None)`` loaded by ``bench/retrieval.load`` (same rows,
            same ACLs), ``prepare`` (HNSW build + calibration), ``knn`` with
            ``acl_filter(principals)``: the service's whole query path.
* exact  -- numpy: a boolean mask from the principals, then a matmul over the
            allowed rows; the ground truth, mask included in its time.
* Chroma -- in-memory client, cosine HNSW (defaults), the ACL as an array
            metadata field, ``where={"$or": [{"acl": {"$contains": p}}, ...]}``
            (array metadata with ``$contains``, Chroma >= 1.x).
* Milvus Lite -- ``MilvusClient("<file>.db")``, an ``ARRAY<VARCHAR>`` field and
            ``array_contains_any(acl, [...])`` as the search ``filter``; the
            vector index is AUTOINDEX/COSINE (Milvus Lite builds what it supports).
            Milvus Lite refuses a scalar (INVERTED) index on an ARRAY field, so
            the filter is evaluated row by row (~25-35 us a row here, whatever the
            vector index): seconds per query at 100k. bench/milvus_probe.py
            measures it against no filter and a scalar filter.
* Qdrant -- local mode ``QdrantClient(":memory:")``, the ACL as a keyword
            list payload, ``Filter(must=[FieldCondition(key="acl",
            match=MatchAny(any=principals))])`` (the documented multitenancy /
            payload-filter way; local mode is a pure-Python scan, no HNSW).
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

Vectors = npt.NDArray[np.float32]


class Adapter(Protocol):
    name: str
    notes: str

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None: ...
    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]: ...
    def close(self) -> None: ...


class DocQA:
    name = "docqa"
    notes = "EmbeddedIndex.knn + acl_filter"

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None:
        import retrieval  # bench/retrieval.py: the same load path (same rows, same ACLs from the same seed)

        from indexer.index.embedded.index import EmbeddedIndex

        self.index = EmbeddedIndex(None)
        retrieval.load(self.index, corpus, seed)
        self.index.prepare(retrieval.STORE)
        self.store = retrieval.STORE
        self.notes += f"; ef policy {self.index.stats(self.store).ef_policy}"

    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]:
        from indexer.index.filters import acl_filter

        hits = self.index.knn(self.store, vector, k, acl_filter(principals))
        return [int(h.chunk.text.split()[1]) for h in hits]

    def close(self) -> None:
        self.index.close()


class Exact:
    name = "exact"
    notes = "numpy: principal mask + matmul over allowed rows"

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None:
        self.vectors = vectors
        names = sorted({p for acl in acls for p in acl})
        self.column = {p: i for i, p in enumerate(names)}
        members = np.zeros((len(names), len(acls)), np.bool_)
        for row, acl in enumerate(acls):
            for p in acl:
                members[self.column[p], row] = True
        self.members = members

    def allowed(self, principals: list[str]) -> npt.NDArray[np.int64]:
        cols = [self.column[p] for p in principals if p in self.column]
        if not cols:
            return np.zeros(0, np.int64)
        return np.flatnonzero(self.members[cols].any(axis=0))

    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]:
        allowed = self.allowed(principals)
        if len(allowed) == 0:
            return []
        scores = self.vectors[allowed] @ vector
        top = np.argpartition(-scores, k)[:k] if len(allowed) > k else np.arange(len(allowed))
        return allowed[top[np.argsort(-scores[top])]].tolist()

    def close(self) -> None:
        pass


class Chroma:
    name = "chroma"
    notes = "in-memory, cosine HNSW defaults, array metadata $or of $contains"

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None:
        import chromadb

        self.notes = f"chromadb {chromadb.__version__}; " + self.notes
        self.client = chromadb.EphemeralClient()
        self.collection = self.client.create_collection("bench", configuration={"hnsw": {"space": "cosine"}})
        batch = min(5000, self.client.get_max_batch_size())
        for start in range(0, len(vectors), batch):
            stop = min(len(vectors), start + batch)
            self.collection.add(
                ids=[str(i) for i in range(start, stop)],
                embeddings=vectors[start:stop],
                metadatas=[{"acl": acls[i]} for i in range(start, stop)],
            )

    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]:
        clauses: list[Any] = [{"acl": {"$contains": p}} for p in principals]
        where = clauses[0] if len(clauses) == 1 else {"$or": clauses}
        result = self.collection.query(query_embeddings=[vector], n_results=k, where=where, include=[])
        return [int(i) for i in result["ids"][0]]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.delete_collection("bench")


class Milvus:
    name = "milvus-lite"
    notes = (
        "Milvus Lite, ARRAY<VARCHAR> acl, array_contains_any filter, AUTOINDEX COSINE"
        " (no scalar index on ARRAY in Milvus Lite: the filter scans every row)"
    )

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None:
        import pymilvus
        from pymilvus import DataType, MilvusClient

        self.notes = f"pymilvus {pymilvus.__version__}; " + self.notes
        self.tmp = tempfile.TemporaryDirectory(prefix="bench-milvus-")
        self.client = MilvusClient(str(Path(self.tmp.name) / "bench.db"))
        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=vectors.shape[1])
        schema.add_field("acl", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=16, max_length=64)
        params = self.client.prepare_index_params()
        params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="COSINE")
        self.client.create_collection("bench", schema=schema, index_params=params)
        batch = 5000
        for start in range(0, len(vectors), batch):
            stop = min(len(vectors), start + batch)
            self.client.insert(
                "bench",
                [{"id": i, "vector": vectors[i].tolist(), "acl": acls[i]} for i in range(start, stop)],
            )
        self.client.flush("bench")
        self.client.load_collection("bench")
        try:
            described = self.client.describe_index("bench", "vector")
            self.notes += f"; index {described.get('index_type')}"
        except Exception:
            pass

    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]:
        expr = "array_contains_any(acl, [" + ", ".join(f'"{p}"' for p in principals) + "])"
        result = self.client.search("bench", data=[vector.tolist()], limit=k, filter=expr, output_fields=[])
        return [int(hit["id"]) for hit in result[0]]

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            self.tmp.cleanup()


class Qdrant:
    name = "qdrant-local"
    notes = "qdrant-client local mode (:memory:), keyword-list payload, MatchAny filter"

    def build(self, vectors: Vectors, acls: list[list[str]], corpus: Any, seed: int) -> None:
        import qdrant_client
        from qdrant_client import QdrantClient, models

        version = getattr(qdrant_client, "__version__", "")
        if not version:
            from importlib.metadata import version as dist_version

            version = dist_version("qdrant-client")
        self.notes = f"qdrant-client {version}; " + self.notes
        self.models = models
        self.client = QdrantClient(":memory:")
        self.client.create_collection(
            "bench", vectors_config=models.VectorParams(size=vectors.shape[1], distance=models.Distance.COSINE)
        )
        with contextlib.suppress(Exception):  # a no-op in local mode, but the documented step
            self.client.create_payload_index("bench", "acl", field_schema=models.PayloadSchemaType.KEYWORD)
        self.client.upload_collection(
            "bench", vectors=vectors, payload=({"acl": acl} for acl in acls), ids=range(len(vectors)), batch_size=2000
        )

    def search(self, vector: Vectors, k: int, principals: list[str]) -> list[int]:
        models = self.models
        flt = models.Filter(must=[models.FieldCondition(key="acl", match=models.MatchAny(any=principals))])
        result = self.client.query_points("bench", query=vector, limit=k, query_filter=flt)
        return [int(p.id) for p in result.points]

    def close(self) -> None:
        self.client.close()


ADAPTERS: dict[str, type] = {
    "docqa": DocQA,
    "exact": Exact,
    "chroma": Chroma,
    "milvus-lite": Milvus,
    "qdrant-local": Qdrant,
}
