"""A document's chunks in order, with their vectors, from the embedded index (``Index.document_chunks``)."""

from __future__ import annotations

import dataclasses

import numpy as np

from acl.errors import NotFound
from indexer.errors import IndexUnavailable
from indexer.index.embedded.filters import filter_mask
from indexer.index.embedded.store import OpenStore
from indexer.index.filters import Filter, and_, documents_filter, validate
from indexer.index.port import ChunkRecord

_RETRIES = 3


def document_chunks(store: OpenStore, store_id: str, document_id: str, filter_: Filter) -> list[ChunkRecord]:
    """The chunks of ``document_id`` matching ``filter_`` by ordinal, each with its unit vector (the in-memory
    mirror's, which every adapter mode holds); retried when another process rewrote the rows meanwhile."""
    validate(filter_)
    # The document filter is ANDed in here too: ``filter_`` alone never widens the selection past the document.
    selection = and_(filter_, documents_filter([document_id]))
    for _ in range(_RETRIES):
        store.refresh()
        with store.lock.read():
            if store.closed:
                raise NotFound(f"store {store_id!r} does not exist")
            rows = store.rows
            allowed = np.flatnonzero(filter_mask(selection, rows))
            seqs = [int(rows.seqs[row]) for row in allowed]
            vectors = rows.vectors[allowed].copy()
            with store.db_lock:
                records = store.table.fetch(seqs)
        if len(records) == len(seqs):
            chunks = [
                dataclasses.replace(records[seq], vector=vector)
                for seq, vector in zip(seqs, vectors, strict=True)
                if records[seq].document_id == document_id
            ]
            return sorted(chunks, key=lambda c: (c.ordinal, c.chunk_id))
        store.stale = True  # rows vanished under us: another process wrote
    raise IndexUnavailable("the embedded index kept changing while reading a document; retry")
