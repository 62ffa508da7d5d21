"""A faiss HNSW graph over a prefix of a store's rows, searched under a row filter."""

from __future__ import annotations

import faiss
import numpy as np
import numpy.typing as npt

from indexer.index.embedded.ef_policy import EfPolicy
from indexer.index.embedded.rows import Mask, Rows

M = 16
_READ_CHUNK = 1 << 20  # bytes per read callback
EF_CONSTRUCTION = 120  # 40 (faiss default) capped recall@10 near 0.93 at 1M rows; 120 reached 0.99+


class HnswGraph:
    """Inner-product HNSW whose node ids are row positions ``0 .. ntotal-1``.

    Not thread-safe for writes: ``add`` must not overlap ``search``; searches
    may overlap each other.
    """

    def __init__(self, dimension: int, m: int = M, ef_construction: int = EF_CONSTRUCTION) -> None:
        self._index = faiss.IndexHNSWFlat(dimension, m, faiss.METRIC_INNER_PRODUCT)
        self._index.hnsw.efConstruction = ef_construction
        self.policy: EfPolicy | None = None  # set by calibration, before the graph is used
        self.calibrated_rows = 0

    @classmethod
    def deserialize(cls, data: memoryview, dimension: int) -> HnswGraph:
        """The graph ``serialize`` wrote. Raises ValueError if ``data`` holds no such graph.

        Read through a callback a megabyte at a time (``faiss.deserialize_index`` first copies all of
        ``data`` into a vector of its own: at a million rows, 0.8 s of a 2.3 s read). faiss lets go of
        the GIL while it reads.
        """
        position = 0

        def read(size: int) -> bytes:
            nonlocal position
            chunk = data[position : position + size].tobytes()
            position += len(chunk)
            return chunk

        try:
            index = faiss.read_index(faiss.PyCallbackIOReader(read, _READ_CHUNK))  # type: ignore[attr-defined]
        except RuntimeError as exc:
            raise ValueError(f"not a faiss index: {exc}") from exc
        if not isinstance(index, faiss.IndexHNSWFlat) or index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise ValueError(f"not an inner-product HNSW graph but {type(index).__name__}")
        if index.d != dimension:
            raise ValueError(f"graph of dimension {index.d}, not {dimension}")
        graph = cls.__new__(cls)
        graph._index, graph.policy, graph.calibrated_rows = index, None, 0
        return graph

    def serialize(self) -> npt.NDArray[np.uint8]:
        """The graph as bytes (don't overlap ``add``)."""
        data: npt.NDArray[np.uint8] = faiss.serialize_index(self._index)
        return data

    def vectors(self, nodes: Rows) -> npt.NDArray[np.float32]:
        """The vectors the graph holds for these nodes."""
        found: npt.NDArray[np.float32] = self._index.reconstruct_batch(np.ascontiguousarray(nodes, np.int64))
        return found

    def copy_vectors(self, out: npt.NDArray[np.float32]) -> None:
        """Copy every node's vector into ``out`` (``ntotal`` rows), straight from the graph's storage."""
        count, dimension = self.ntotal, self.dimension
        if count == 0:
            return
        storage = faiss.downcast_index(self._index.storage)
        held = faiss.rev_swig_ptr(storage.get_xb(), count * dimension)  # type: ignore[attr-defined]  # a view: copied before returning
        np.copyto(out[:count], held.reshape(count, dimension))

    @property
    def dimension(self) -> int:
        """Length of the vectors."""
        return int(self._index.d)

    @property
    def ntotal(self) -> int:
        """Number of rows in the graph (rows ``0 .. ntotal-1``)."""
        return int(self._index.ntotal)

    def add(self, vectors: npt.NDArray[np.float32]) -> None:
        """Append the next rows (their ids continue from ``ntotal``)."""
        self._index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def search(self, query: npt.NDArray[np.float32], k: int, allowed: Mask, ef: int) -> Rows:
        """Up to ``k`` approximate nearest rows among those where ``allowed`` is True.

        ``allowed`` covers rows ``0 .. ntotal-1``; the filter is applied inside
        the graph walk (faiss ``IDSelectorBitmap``), so no disallowed row is
        returned. Fewer than ``k`` rows may come back under narrow filters.
        """
        bitmap = np.packbits(allowed[: self.ntotal], bitorder="little")
        selector = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        params = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]
            sel=selector, efSearch=max(int(ef), k)
        )
        _, labels = self._index.search(query.reshape(1, -1), k, params=params)
        found: Rows = labels[0]
        return found[found >= 0].astype(np.int64)
