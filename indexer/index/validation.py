"""Input checks every index adapter shares: chunk vectors and query vectors (store ids: ``indexer.store_ids``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument
from indexer.index.port import ChunkRecord, Vector

#: A float32 matrix or vector, as the index adapters hold them.
Vector32 = npt.NDArray[np.float32]


def _normalised(matrix: Vector32, what: str) -> Vector32:
    if not np.all(np.isfinite(matrix)):
        raise InvalidArgument(f"{what} holds NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise InvalidArgument(f"{what} has a zero vector, which has no direction")
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def chunk_vectors(chunks: Sequence[ChunkRecord], dimension: int) -> Vector32:
    """The chunks' vectors as one L2-normalised float32 matrix, after checking the chunks.

    Raises InvalidArgument for a missing or mis-sized vector, an empty id, or
    a chunk id given twice.
    """
    seen: set[str] = set()
    for chunk in chunks:
        if not chunk.chunk_id or not chunk.document_id:
            raise InvalidArgument("chunks need a non-empty chunk_id and document_id")
        if chunk.chunk_id in seen:
            raise InvalidArgument(f"chunk id {chunk.chunk_id!r} appears twice in one upsert")
        seen.add(chunk.chunk_id)
        if chunk.vector is None:
            raise InvalidArgument(f"chunk {chunk.chunk_id!r} has no vector")
        if np.shape(chunk.vector) != (dimension,):
            raise InvalidArgument(
                f"chunk {chunk.chunk_id!r} has a vector of shape {np.shape(chunk.vector)};"
                f" the store's dimension is {dimension}"
            )
    if not chunks:
        return np.zeros((0, dimension), np.float32)
    matrix = np.stack([np.asarray(c.vector, dtype=np.float32) for c in chunks])
    return _normalised(matrix, "a chunk vector")


def query_vector(vector: Vector, dimension: int) -> Vector32:
    """The query as a contiguous L2-normalised float32 vector of the store's dimension."""
    array = np.asarray(vector, dtype=np.float32)
    if array.shape != (dimension,):
        raise InvalidArgument(f"query vector has shape {array.shape}; the store's dimension is {dimension}")
    unit: Vector32 = _normalised(array.reshape(1, -1), "the query vector")[0]
    return unit
