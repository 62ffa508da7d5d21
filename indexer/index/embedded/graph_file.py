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
import mmap
import os
import struct
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import xxhash

from indexer.index.embedded import saved_rows
from indexer.index.embedded.ef_policy import EfPolicy, Points
from indexer.index.embedded.hnsw import HnswGraph
from indexer.index.embedded.rows import Rows, RowTable
from indexer.index.embedded.saved_rows import ChangeMark, Sections
from indexer.private_files import private_dir

MAGIC = b"DOCQA-HNSW 1\n"
SUFFIX = ".hnsw"
_ALIGN = 64  # row sections start at multiples of this, so their arrays are aligned


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
class SavedRows:
    """The row table a graph file holds (its first rows are the graph's nodes), the change-log entry it
    was current at, and its sections as read (mapped: valid only while ``load`` runs)."""

    mark: saved_rows.ChangeMark
    sections: saved_rows.Sections
    table: RowTable


@dataclass(frozen=True, slots=True)
class StoredGraph:
    """A graph read back, with the ``seq`` of each node's row (-1: none), the file it came from, and the
    rows saved with it (None in a file saved without)."""

    graph: HnswGraph
    node_seqs: Rows
    signature: Signature
    rows: SavedRows | None = None


def graph_path(store_path: Path) -> Path:
    """Where the graph of the store at ``store_path`` lives."""
    return Path(f"{store_path}{SUFFIX}")


def signature(path: Path) -> Signature | None:
    """The signature of the file at ``path`` now (one ``stat``); None when there is none."""
    try:
        return Signature.of(os.stat(path))
    except OSError:
        return None


def save(
    path: Path,
    store_uuid: str,
    graph: HnswGraph,
    data: npt.NDArray[np.uint8],
    node_seqs: Rows,
    rows: tuple[ChangeMark, Sections] | None = None,
) -> Signature:
    """Write ``graph`` (serialized as ``data``) atomically: a reader sees the old file or the new one.

    ``rows``, when given, is the row table the graph serves (``saved_rows.encode``) with the change-log
    entry it is current at. Returns the signature of the file written.
    """
    seqs = np.ascontiguousarray(node_seqs, dtype="<i8").tobytes()
    digest = xxhash.xxh3_128(seqs)
    digest.update(data.data)
    policy = graph.policy or EfPolicy(())
    layout: dict[str, list[int]] = {}
    parts: list[memoryview] = []
    rows_header: dict[str, Any] | None = None
    if rows is not None:
        mark, sections = rows
        offset = 0
        for name, dtype in saved_rows.dtypes().items():
            array = np.ascontiguousarray(sections[name], dtype=dtype)
            pad = -offset % _ALIGN
            if pad:
                parts.append(memoryview(bytes(pad)))
                offset += pad
            layout[name] = [offset, array.nbytes, *array.shape]
            parts.append(array.reshape(-1).view(np.uint8).data)
            offset += array.nbytes
        for part in parts:
            digest.update(part)
        rows_header = {"change": mark.change, "change_digest": mark.digest, "sections": layout}
        digest.update(_canonical(rows_header))  # the header is not in the payload: where the rows lie is checked too
    header = json.dumps(
        {
            "store_uuid": store_uuid,
            "dimension": graph.dimension,
            "nodes": graph.ntotal,
            "policy": [list(point) for point in policy.points],
            "wide_policy": None if policy.wide is None else [list(point) for point in policy.wide],
            "extrapolate": policy.extrapolate,
            "calibrated_rows": graph.calibrated_rows,
            "xxh3_128": digest.hexdigest(),
            "graph_bytes": len(data),
            "rows": rows_header,
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
            for part in parts:
                out.write(part)
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


def load(path: Path, store_uuid: str, dimension: int, *, with_rows: bool = True) -> StoredGraph | None:
    """The graph in ``path``, or None when there is no file. Raises GraphFileError for a bad one.

    Nothing is parsed before the checksum holds. With ``with_rows`` (opening a store) the file is
    memory-mapped and the rows saved with it are decoded while faiss reads the graph on another thread:
    a fresh process at a million rows answers from the graph in about 1.6 s instead of 24 s. The graph and
    the row table are copied out of the mapping; the returned ``SavedRows.sections`` still read it (the
    caller's sample check), and it is unmapped with the last of them. (A file truncated in place while it
    is mapped -- ``cp`` over it, not DocQA, which writes aside and renames -- would fault the process in
    that window; adopting another process's file in a running server, ``with_rows=False``, reads it into
    memory instead.)
    """
    try:
        with open(path, "rb") as file:  # one open: the signature is that of the bytes read
            stamp = Signature.of(os.fstat(file.fileno()))
            raw = _mapped(file) if with_rows and stamp.size else None
            if raw is None:
                raw = memoryview(bytearray(stamp.size))
                raw = raw[: file.readinto(raw)]
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise GraphFileError(f"unreadable: {exc}") from exc
    try:
        return _parse(raw, stamp, store_uuid, dimension, with_rows)
    except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(1e999)
        raise GraphFileError(f"malformed: {exc}") from exc


def _mapped(file: BinaryIO) -> memoryview | None:
    """The file memory-mapped; None where it cannot be (a file system without mmap): read it instead."""
    try:
        return memoryview(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None


def _parse(view: memoryview, stamp: Signature, store_uuid: str, dimension: int, with_rows: bool) -> StoredGraph:
    header, payload = _split(view)
    if not _checksum(header, payload):
        raise GraphFileError("checksum mismatch")
    if header["store_uuid"] != store_uuid or not store_uuid:
        raise GraphFileError("it indexes another store file")
    if int(header["dimension"]) != dimension:
        raise GraphFileError(f"dimension {header['dimension']}, not {dimension}")
    nodes = int(header["nodes"])
    graph_bytes = int(header.get("graph_bytes", len(payload) - 8 * nodes))
    if nodes < 0 or graph_bytes < 0 or 8 * nodes + graph_bytes > len(payload):
        raise GraphFileError(f"{len(payload)} bytes cannot hold {nodes} nodes and a {graph_bytes}-byte graph")
    # The graph is read on another thread (faiss lets go of the GIL) while the rows are decoded on this one.
    with ThreadPoolExecutor(1, thread_name_prefix="docqa-graph-read") as pool:
        reading = pool.submit(HnswGraph.deserialize, payload[8 * nodes : 8 * nodes + graph_bytes], dimension)
        try:
            rows = None
            layout = header.get("rows")
            if layout is not None and with_rows:
                sections = _sections(payload[8 * nodes + graph_bytes :], layout["sections"])
                mark = saved_rows.ChangeMark(int(layout["change"]), str(layout["change_digest"]))
                rows = SavedRows(mark, sections, saved_rows.decode(sections, dimension, nodes))
        finally:
            graph = reading.result()
    node_seqs: Rows = np.frombuffer(payload[: 8 * nodes], dtype="<i8").astype(np.int64)
    if graph.ntotal != nodes:
        raise GraphFileError(f"{graph.ntotal} nodes, header says {nodes}")
    graph.policy = EfPolicy(
        _points(header["policy"]),
        extrapolate=bool(header["extrapolate"]),
        wide=None if header.get("wide_policy") is None else _points(header["wide_policy"]),  # None: not measured
    )
    graph.calibrated_rows = int(header["calibrated_rows"])
    if rows is not None:
        if not np.array_equal(np.where(rows.table.alive[:nodes], rows.table.seqs[:nodes], -1), node_seqs):
            raise GraphFileError("its saved rows are not its graph's")
        graph.copy_vectors(rows.table.vectors[:nodes])
    return StoredGraph(graph, node_seqs, stamp, rows)


def _checksum(header: dict[str, Any], payload: memoryview) -> bool:
    """Whether the payload (and the header's account of the saved rows) has the checksum the header gives:
    xxh3-128 (a corrupt file is the risk, not a forged one: whoever can write this file can write the
    store), or sha256 in files saved before rows were."""
    if "xxh3_128" in header:
        digest = xxhash.xxh3_128(payload)
        if header.get("rows") is not None:
            digest.update(_canonical(header["rows"]))
        return bool(digest.hexdigest() == header["xxh3_128"])
    return "rows" not in header and bool(hashlib.sha256(payload).hexdigest() == header["sha256"])


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def _sections(data: memoryview, layout: dict[str, Any]) -> saved_rows.Sections:
    """The row sections ``layout`` places in ``data``, as read-only arrays over it (no copy)."""
    sections: saved_rows.Sections = {}
    for name, dtype in saved_rows.dtypes().items():
        offset, length, *shape = (int(value) for value in layout[name])
        size = np.dtype(dtype).itemsize
        if offset < 0 or length < 0 or offset + length > len(data) or length != size * math.prod(shape):
            raise GraphFileError(f"row section {name} does not fit the file")
        sections[name] = np.frombuffer(data[offset : offset + length], dtype=dtype).reshape(shape)
    return sections


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


def _split(raw: memoryview) -> tuple[dict[str, Any], memoryview]:
    if len(raw) < len(MAGIC) + 8 or raw[: len(MAGIC)] != MAGIC:
        raise GraphFileError("not a DocQA graph file")
    (length,) = struct.unpack_from("<Q", raw, len(MAGIC))
    start = len(MAGIC) + 8
    if length > min(len(raw) - start, 1 << 20):
        raise GraphFileError("header longer than the file")
    header = json.loads(bytes(raw[start : start + length]))
    if not isinstance(header, dict):
        raise GraphFileError("malformed header")
    return header, raw[start + length :]
