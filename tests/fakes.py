"""Fakes of our ports for unit tests (the embedder and generator fakes are in fakes_service.py)."""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index.attributes import instant as attribute_instant
from indexer.index.attributes import parse_instant
from indexer.index.filters import Filter, validate
from indexer.index.lexical import query_terms
from indexer.index.port import ChunkRecord, Index, SearchHit, StoreSpec, Vector


def _matches(filter_: Filter, chunk: ChunkRecord) -> bool:
    """Does ``chunk`` pass ``filter_``? Written for clarity, not speed."""
    operator = filter_["operator"]
    if operator == "AND":
        return all(_matches(c, chunk) for c in filter_["conditions"])
    if operator == "OR":
        return any(_matches(c, chunk) for c in filter_["conditions"])
    if operator == "NOT":
        return not _matches(filter_["conditions"][0], chunk)
    field, value = filter_["field"], filter_["value"]
    if operator in (">=", "<="):
        instant = chunk.modified if field == "modified" else chunk.indexed_at
        if instant is None:
            return False
        bound = parse_instant(value)
        return attribute_instant(instant) >= bound if operator == ">=" else attribute_instant(instant) <= bound
    if operator == "prefix":
        return chunk.document_id.startswith(value)
    if operator == "glob":
        return fnmatch.fnmatchcase(chunk.document_id, value.replace("[", "[[]"))
    if operator == "contains":
        return value.lower() in chunk.title.lower()
    if field.startswith("metadata."):
        key = field.removeprefix("metadata.")
        values = {chunk.metadata[key]} if key in chunk.metadata else set()
    else:
        values = {
            "document_id": {chunk.document_id},
            "chunk_id": {chunk.chunk_id},
            "acl_allow": set(chunk.acl.allow),
            "acl_deny": set(chunk.acl.deny),
            "content_type": {chunk.content_type},
        }[field]
    wanted = {filter_["value"]} if operator == "==" else set(filter_["value"])
    hit = not values.isdisjoint(wanted)
    return not hit if operator == "not in" else hit


_WORD = re.compile(r"[^\W_]+")


def _words(chunk: ChunkRecord) -> list[str]:
    """What lexical search reads of a chunk: its text, title and headings, as lower-case words."""
    return _WORD.findall(" ".join([chunk.text, chunk.title, *chunk.heading_path]).lower())


def _unit(vector: Vector | None, dimension: int, what: str) -> np.ndarray:
    if vector is None:
        raise InvalidArgument(f"{what} has no vector")
    array = np.asarray(vector, dtype=np.float64)
    if array.shape != (dimension,):
        raise InvalidArgument(f"{what} has shape {array.shape}; the store's dimension is {dimension}")
    norm = float(np.linalg.norm(array))
    if not np.isfinite(norm) or norm == 0:
        raise InvalidArgument(f"{what} is zero or not finite")
    return array / norm


class FakeIndex(Index):
    """The obviously correct index: dicts and brute force, ``knn`` is ``exact``."""

    def __init__(self) -> None:
        self.dimensions: dict[str, int] = {}
        self.chunks: dict[str, dict[str, ChunkRecord]] = {}
        self.vectors: dict[str, dict[str, np.ndarray]] = {}

    def _store(self, store_id: str) -> dict[str, ChunkRecord]:
        if store_id not in self.chunks:
            raise NotFound(f"store {store_id!r} does not exist")
        return self.chunks[store_id]

    def ensure(self, store: StoreSpec) -> None:
        if store.dimension < 1:
            raise InvalidArgument("store dimension must be positive")
        known = self.dimensions.get(store.store_id)
        if known is not None and known != store.dimension:
            raise InvalidArgument(
                f"store {store.store_id!r} exists with vector dimension {known}, not {store.dimension}"
            )
        self.dimensions[store.store_id] = store.dimension
        self.chunks.setdefault(store.store_id, {})
        self.vectors.setdefault(store.store_id, {})

    def upsert(self, store_id: str, chunks: Sequence[ChunkRecord]) -> None:
        stored = self._store(store_id)
        ids = [c.chunk_id for c in chunks]
        if len(ids) != len(set(ids)):
            raise InvalidArgument("a chunk id appears twice in one upsert")
        if any(not c.chunk_id or not c.document_id for c in chunks):
            raise InvalidArgument("chunks need a non-empty chunk_id and document_id")
        units = [_unit(c.vector, self.dimensions[store_id], f"chunk {c.chunk_id!r}") for c in chunks]
        documents = {c.document_id for c in chunks}
        for chunk_id in [i for i, c in stored.items() if c.document_id in documents or i in ids]:
            del stored[chunk_id]
            del self.vectors[store_id][chunk_id]
        for chunk, unit in zip(chunks, units, strict=True):
            stored[chunk.chunk_id] = dataclasses.replace(chunk, vector=None)
            self.vectors[store_id][chunk.chunk_id] = unit

    def delete_document(self, store_id: str, document_id: str) -> None:
        stored = self._store(store_id)
        for chunk_id in [i for i, c in stored.items() if c.document_id == document_id]:
            del stored[chunk_id]
            del self.vectors[store_id][chunk_id]

    def set_document_acl(self, store_id: str, document_id: str, acl: Acl) -> None:
        stored = self._store(store_id)
        for chunk_id, chunk in list(stored.items()):
            if chunk.document_id == document_id:
                stored[chunk_id] = dataclasses.replace(chunk, acl=acl)

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        return self.exact(store_id, vector, k, filter)

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidArgument(f"k must be a positive integer, got {k!r}")
        if filter is not None:
            validate(filter)
        stored = self._store(store_id)
        query = _unit(vector, self.dimensions[store_id], "the query vector")
        scored = [
            (float(np.clip((self.vectors[store_id][i] * query).sum(), -1.0, 1.0)), i)
            for i, chunk in stored.items()
            if filter is None or _matches(filter, chunk)
        ]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [SearchHit(stored[i], score) for score, i in scored[:k]]

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        """Okapi BM25 (k1 1.2, b 0.75) over every chunk of the store, then the filter: slow and plain."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidArgument(f"k must be a positive integer, got {k!r}")
        if filter is not None:
            validate(filter)
        stored = self._store(store_id)
        terms = query_terms(text)
        if not terms or not stored:
            return []
        bags = {i: Counter(_words(c)) for i, c in stored.items()}
        average = sum(sum(bag.values()) for bag in bags.values()) / len(bags)
        scored = []
        for chunk_id, bag in bags.items():
            length = sum(bag.values())
            score = 0.0
            for term in terms:
                tf = bag[term]
                if tf:
                    df = sum(1 for other in bags.values() if other[term])
                    idf = math.log(1 + (len(bags) - df + 0.5) / (df + 0.5))
                    score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / max(average, 1e-9)))
            if score > 0 and (filter is None or _matches(filter, stored[chunk_id])):
                scored.append((score, chunk_id))
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        return [
            SearchHit(dataclasses.replace(stored[i], vector=self.vectors[store_id][i].astype(np.float32)), score)
            for score, i in scored[:k]
        ]

    def document_chunks(self, store_id: str, document_id: str, filter: Filter) -> list[ChunkRecord]:
        validate(filter)
        stored = self._store(store_id)
        found = [
            dataclasses.replace(c, vector=self.vectors[store_id][i].astype(np.float32))
            for i, c in stored.items()
            if c.document_id == document_id and _matches(filter, c)
        ]
        return sorted(found, key=lambda c: (c.ordinal, c.chunk_id))

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        if filter is not None:
            validate(filter)
        stored = self._store(store_id)
        return sum(1 for c in stored.values() if filter is None or _matches(filter, c))

    def drop(self, store_id: str) -> None:
        self._store(store_id)
        del self.chunks[store_id], self.vectors[store_id], self.dimensions[store_id]
