"""A store's HNSW graph on disk, next to its SQLite file, so a fresh process need not rebuild it.

One file, ``<store>.sqlite.hnsw``, replaced atomically: a magic line, a JSON
header, then the payload (the SQLite ``seq`` of each graph node's row, -1 for a
row that was already dead, followed by the faiss graph). The header names the
store file it indexes (a random id kept in that file), the dimension, the
node count, the efSearch calibration and the sha256 of the payload. A file
that fails any check is reported (``GraphFileError``) and never served. A
file's ``Signature`` (inode, size, mtime) tells a running process, with one
``stat``, that another process saved a new one (``graph_watch``), and
``nodes_claimed`` reads just its header to tell whether it is worth reading.

Rows never change their vector under one ``seq`` (an ACL change keeps the
vector; a new version of a chunk gets a new ``seq``), so the graph stays right
for whatever rows the file holds now: rows deleted since are masked, rows
added since are searched exactly until the graph is extended.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from indexer.index.embedded.ef_policy import EfPolicy, Points
from indexer.index.embedded.hnsw import HnswGraph
from indexer.index.embedded.rows import Rows
from indexer.private_files import private_dir

MAGIC = b"DOCQA-HNSW 1\n"
SUFFIX = ".hnsw"


class GraphFileError(Exception):
    """The graph file is corrupt, or indexes another store: rebuild instead."""


@dataclass(frozen=True, slots=True)
class Signature:
    """Which file a path held when it was looked at: a replaced or rewritten file differs."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> Signature:
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True, slots=True)
class StoredGraph:
    """A graph read back, with the ``seq`` of each node's row (-1: none) and the file it came from."""

    graph: HnswGraph
    node_seqs: Rows
    signature: Signature


def graph_path(store_path: Path) -> Path:
    """Where the graph of the store at ``store_path`` lives."""
    return Path(f"{store_path}{SUFFIX}")


def signature(path: Path) -> Signature | None:
    """The signature of the file at ``path`` now (one ``stat``); None when there is none."""
    try:
        return Signature.of(os.stat(path))
    except OSError:
        return None


def save(path: Path, store_uuid: str, graph: HnswGraph, data: npt.NDArray[np.uint8], node_seqs: Rows) -> Signature:
    """Write ``graph`` (serialized as ``data``) atomically: a reader sees the old file or the new one.

    Returns the signature of the file written.
    """
    seqs = np.ascontiguousarray(node_seqs, dtype="<i8").tobytes()
    digest = hashlib.sha256(seqs)
    digest.update(data.data)
    policy = graph.policy or EfPolicy(())
    header = json.dumps(
        {
            "store_uuid": store_uuid,
            "dimension": graph.dimension,
            "nodes": graph.ntotal,
            "policy": [list(point) for point in policy.points],
            "wide_policy": None if policy.wide is None else [list(point) for point in policy.wide],
            "extrapolate": policy.extrapolate,
            "calibrated_rows": graph.calibrated_rows,
            "sha256": digest.hexdigest(),
        }
    ).encode()
    private_dir(path.parent)
    fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)  # 0600
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", len(header)) + header)
            out.write(seqs)
            out.write(data.data)
            out.flush()
            os.fsync(out.fileno())
            written = Signature.of(os.fstat(out.fileno()))
        os.replace(temporary, path)  # the inode, size and mtime move with the name
    finally:
        temporary.unlink(missing_ok=True)
    return written


def nodes_claimed(path: Path, store_uuid: str) -> int | None:
    """The node count the header of ``path`` claims for this store (no checksum: a cheap first look).

    None when there is no file, or its header is not one of this store's graphs.
    """
    try:
        with open(path, "rb") as file:
            head = file.read(len(MAGIC) + 8)
            if not head.startswith(MAGIC) or len(head) < len(MAGIC) + 8:
                return None
            (length,) = struct.unpack_from("<Q", head, len(MAGIC))
            header = json.loads(file.read(min(length, 1 << 16)))
        if not isinstance(header, dict) or header.get("store_uuid") != store_uuid or not store_uuid:
            return None
        return int(header["nodes"])
    except (OSError, KeyError, TypeError, ValueError, OverflowError):
        return None


def load(path: Path, store_uuid: str, dimension: int) -> StoredGraph | None:
    """The graph in ``path``, or None when there is no file. Raises GraphFileError for a bad one."""
    try:
        with open(path, "rb") as file:  # one open: the signature is that of the bytes read
            stamp = Signature.of(os.fstat(file.fileno()))
            raw = file.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise GraphFileError(f"unreadable: {exc}") from exc
    try:
        header, payload = _split(raw)
        nodes = int(header["nodes"])
        if hashlib.sha256(payload).hexdigest() != header["sha256"]:
            raise GraphFileError("checksum mismatch")
        if header["store_uuid"] != store_uuid or not store_uuid:
            raise GraphFileError("it indexes another store file")
        if int(header["dimension"]) != dimension:
            raise GraphFileError(f"dimension {header['dimension']}, not {dimension}")
        node_seqs: Rows = np.frombuffer(payload[: 8 * nodes], dtype="<i8").astype(np.int64)
        graph = HnswGraph.deserialize(np.frombuffer(payload[8 * nodes :], np.uint8).copy(), dimension)
        if graph.ntotal != nodes:
            raise GraphFileError(f"{graph.ntotal} nodes, header says {nodes}")
        graph.policy = EfPolicy(
            _points(header["policy"]),
            extrapolate=bool(header["extrapolate"]),
            wide=None if header.get("wide_policy") is None else _points(header["wide_policy"]),  # None: not measured
        )
        graph.calibrated_rows = int(header["calibrated_rows"])
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(1e999)
        raise GraphFileError(f"malformed: {exc}") from exc
    return StoredGraph(graph, node_seqs, stamp)


def _points(raw: Any) -> Points:
    """(selectivity, efSearch) pairs as calibration writes them; ValueError for anything else (a corrupt or
    edited header: only the payload is under the checksum, and a bad point would fail every query later)."""
    points = tuple((float(s), int(ef)) for s, ef in raw)
    selectivities = [s for s, _ in points]
    if any(not (math.isfinite(s) and 0.0 < s <= 1.0) for s in selectivities) or any(ef < 1 for _, ef in points):
        raise ValueError(f"efSearch points out of range: {raw!r}")
    if any(a <= b for a, b in itertools.pairwise(selectivities)):
        raise ValueError(f"efSearch points not broadest first: {raw!r}")
    return points


def _split(raw: bytes) -> tuple[dict[str, Any], memoryview]:
    if not raw.startswith(MAGIC) or len(raw) < len(MAGIC) + 8:
        raise GraphFileError("not a DocQA graph file")
    (length,) = struct.unpack_from("<Q", raw, len(MAGIC))
    start = len(MAGIC) + 8
    header = json.loads(raw[start : start + length])
    if not isinstance(header, dict):
        raise GraphFileError("malformed header")
    return header, memoryview(raw)[start + length :]
