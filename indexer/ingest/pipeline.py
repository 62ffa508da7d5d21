"""The ingest pipeline: files → loaders → chunks → embeddings → index → catalog.

Idempotent and resumable. A document's chunks are written to the index in one
atomic upsert, and only then is the document (with its content hash) saved in
the catalog; so a run killed at any point leaves each document either fully
indexed and recorded, or not recorded, and a re-run finishes the job. Nothing
is embedded twice for an unchanged file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from acl.errors import DocQAError, InvalidArgument
from acl.model import Acl
from indexer.chunker import Chunker
from indexer.documents import DocumentRecord, LoadedDocument, validate_title
from indexer.embedder import Embedder
from indexer.errors import LoadError, UnsafePath
from indexer.index import ChunkRecord, Index
from indexer.index.attributes import EMPTY_METADATA, frozen_metadata, instant, iso
from indexer.index.port import DocumentsRejected
from indexer.ingest.manifest import MANIFEST_NAME, load_manifest
from indexer.ingest.read_ahead import read_ahead
from indexer.ingest.safe_scan import ScanResult, modified_inside, read_inside, scan_folder
from indexer.ingest.shards import WHOLE, Shard
from indexer.loaders import SUPPORTED_SUFFIXES, content_type_for, load_bytes
from indexer.source_uris import validate_source_uri

log = logging.getLogger("docqa.indexer")

#: Chunks embedded per model call: large enough to keep the model busy,
#: small enough that a killed run loses little work.
EMBED_BATCH_CHUNKS = 256


class Catalog(Protocol):
    """What the pipeline reads about documents, and removes (the settings repository)."""

    def list_documents(self, store_id: str, origin: str | None = None) -> list[DocumentRecord]: ...

    def get_document(self, store_id: str, document_id: str) -> DocumentRecord | None: ...

    def delete_document(self, store_id: str, document_id: str) -> bool: ...

    def mark_for_reindex(self, store_id: str, document_id: str) -> None: ...


class AccessRecorder(Protocol):
    """The owner of access state (``service.access.state``): the pipeline asks it, never writes ACLs or groups itself.

    A document's ACL as the pipeline knows it is the *ingested* one (the
    manifest's, or the push's); what the index copy carries is the *effective*
    one, which an administrator's override may have changed.
    """

    def record_document(self, document: DocumentRecord) -> None:
        """Save the indexed document with its ingested ACL."""
        ...

    def record_ingested_acl(self, store_id: str, document_id: str, acl: Acl) -> Acl:
        """Record a new ingested ACL; return the effective one."""
        ...

    def effective_acls(self, store_id: str, ingested: Mapping[str, Acl]) -> Mapping[str, Acl]:
        """The ACL in force for each document, given its ingested ACL."""
        ...

    def replace_manifest_groups(self, store_id: str, groups: Mapping[str, Iterable[str]]) -> None:
        """Make ``groups`` the store-scoped memberships of ``store_id``'s manifest."""
        ...


@dataclass(slots=True)
class IndexReport:
    """What one run did, for people and for exit codes."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    acl_updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    #: Files no manifest rule matches: indexed, but readable by nobody.
    unmatched: list[str] = field(default_factory=list)
    chunks: int = 0

    @property
    def ok(self) -> bool:
        """False only when files failed and nothing at all could be indexed."""
        return not self.failed or bool(self.indexed or self.unchanged or self.acl_updated)


@dataclass(frozen=True, slots=True)
class DocumentFacts:
    """What the index keeps of a document besides its text, for metadata filters: its media type, when it
    was modified (a file's mtime, or what a push gave) and the custom metadata a push set."""

    content_type: str = ""
    modified: datetime | None = None
    metadata: Mapping[str, str] = field(default_factory=lambda: EMPTY_METADATA)

    @classmethod
    def of(cls, content_type: str, modified: datetime | None, metadata: Mapping[str, str] | None) -> DocumentFacts:
        """Validated facts (InvalidArgument for a bad metadata key or value, or a date without a zone)."""
        media_type = content_type.split(";", 1)[0].strip().lower()
        return cls(media_type, None if modified is None else instant(modified), frozen_metadata(metadata))

    def digest(self, data: bytes) -> str:
        """The document's content hash: of its bytes alone when a push set no metadata and no modified date
        (the hash of every earlier release, so upgrading re-embeds nothing), else of its bytes and these
        facts, so that a change of either alone re-indexes it (and an unchanged document is left alone)."""
        if not self.metadata and self.modified is None:
            return content_hash(data)
        facts = {"content_type": self.content_type, "metadata": dict(self.metadata)}
        facts["modified"] = None if self.modified is None else iso(self.modified)  # type: ignore[assignment]
        return hashlib.sha256(
            hashlib.sha256(data).digest() + json.dumps(facts, sort_keys=True).encode("utf-8")
        ).hexdigest()


@dataclass(slots=True)
class _Pending:
    document_id: str
    content_hash: str
    acl: Acl
    source_uri: str
    loaded: LoadedDocument
    records: list[ChunkRecord]


@dataclass(frozen=True, slots=True)
class _Unloadable:
    """A file that could not be loaded: refused (not a regular file inside the folder any more) or failed."""

    document_id: str
    reason: str
    refused: bool


def _chunk_count(item: _Pending | _Unloadable) -> int:
    return len(item.records) if isinstance(item, _Pending) else 0


Progress = Callable[[int], None]

#: Batches of chunks read and chunked ahead of the encoder by default (``indexing.prefetch_batches``).
PREFETCH_BATCHES = 2


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_and_manifest(root: Path, manifest_path: Path | None = None) -> tuple[Path, Path]:
    """The folder to index (resolved) and its ACL manifest; InvalidArgument names what is missing."""
    if not root.exists():
        raise InvalidArgument(f"folder {root} does not exist")
    if not root.is_dir():
        raise InvalidArgument(f"{root} is not a folder")
    root = root.resolve()
    manifest_file = manifest_path or root / MANIFEST_NAME
    if not os.path.lexists(manifest_file):  # a link is there, and refused by load_manifest
        raise InvalidArgument(
            f"no ACL manifest at {manifest_file}: create {MANIFEST_NAME} in the folder "
            "or pass --acl-manifest (documents without a rule are readable by nobody)"
        )
    return root, manifest_file


class Ingestor:
    """Indexes documents of one store into an index and records them in a catalog."""

    def __init__(
        self,
        *,
        index: Index,
        catalog: Catalog,
        access: AccessRecorder,
        embedder: Embedder,
        store_id: str,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        prefetch_batches: int = PREFETCH_BATCHES,
    ) -> None:
        """``prefetch_batches``: batches of chunks a folder run reads and chunks ahead of the encoder, in a
        thread (0: one thread, each file read when the encoder wants it)."""
        self._clock = clock
        self._prefetch_batches = max(0, prefetch_batches)
        self._index = index
        self._catalog = catalog
        self._access = access
        self._embedder = embedder
        self._store_id = store_id
        self._chunker = Chunker(embedder.tokenizer, embedder.max_tokens)

    # folders ----------------------------------------------------------------------
    def scan(self, root: Path) -> ScanResult:
        """Indexable files under ``root`` (sorted), unsupported ones, and refused entries.

        Never follows a link and never reads a non-regular file (see ``indexer.ingest.safe_scan``).
        """
        if not root.is_dir():
            raise InvalidArgument(f"{root} is not a folder")
        return scan_folder(root, SUPPORTED_SUFFIXES, ignore=frozenset({MANIFEST_NAME}))

    def index_folder(
        self,
        root: Path,
        manifest_path: Path | None = None,
        *,
        progress: Progress | None = None,
        on_total: Callable[[int], None] | None = None,
        on_chunks: Progress | None = None,
        reindex: bool = False,
        shard: Shard = WHOLE,
    ) -> IndexReport:
        """Bring the store in line with the folder: add, re-index, re-ACL, remove.

        ``on_total`` gets the number of files to look at, ``progress`` each
        file done (indexed, unchanged, failed) and ``on_chunks`` each batch of
        chunks embedded and written. Links, special files and names no rule can
        match are never indexed (one already indexed is removed); each is named
        in ``report.refused``.

        A store has one folder: indexing another folder into it (the folder was
        moved or replaced) removes the documents of the previous folder, and
        the new folder's manifest becomes the store's manifest (its groups
        replace the old manifest's, in this store only). Indexing the store's
        folder after it was removed removes its documents and its manifest's
        groups (an unknown missing path is an error).

        Files are read, parsed and chunked in a background thread at most
        ``prefetch_batches`` batches ahead of the encoder; the store, the
        report and the progress calls are those of a one-thread run, and an
        error (the thread's or the caller's) ends the thread before it is raised.

        ``reindex`` loads, chunks and embeds every file again, changed or not:
        what a newer loader or chunker extracts (PDF pages, HTML anchors,
        cleaner text) reaches documents indexed before it.

        ``shard`` (``docqa index --shard i/N``) limits all of that to the
        shard's documents (``indexer.ingest.shards``): its files are indexed
        and re-ACLed, and only its documents whose files are gone are removed;
        shard 0 alone makes the manifest's groups the store's (one writer of
        store-wide rows: concurrent replacements of the same rows would collide
        in PostgreSQL). So the N shards of a split, run in any order or at
        once, leave the store as one run does.
        """
        if not os.path.lexists(root):
            gone = self._forget_folder(root.resolve(), shard)
            if gone is not None:
                return gone
        root, manifest_file = folder_and_manifest(root, manifest_path)
        manifest = load_manifest(manifest_file)
        origin = f"folder:{root}"
        found = _shard_of_scan(self.scan(root), shard)
        if shard.index == 0:
            self._access.replace_manifest_groups(self._store_id, manifest.groups)
        report = IndexReport(skipped=found.unsupported, refused=dict(found.refused))
        known: dict[str, DocumentRecord] = {}
        for document in self._catalog.list_documents(self._store_id):
            if not shard.owns(document.id):
                continue
            if document.origin == origin:
                known[document.id] = document
            elif document.origin.startswith("folder:"):
                # Another folder's document (the store's folder moved): a file of the
                # same path here takes its place, any other goes with the old folder.
                known[document.id] = replace(document, content_hash="")
        if on_total:
            on_total(len(found.files))
        seen: set[str] = set()
        work: list[tuple[str, Acl, DocumentFacts]] = []
        for document_id in found.files:
            seen.add(document_id)
            try:
                # A file's mtime is recorded, not hashed: touching a file (a checkout, a copy) re-embeds nothing.
                facts = DocumentFacts.of(content_type_for(document_id) or "", None, None)
                digest = facts.digest(read_inside(root, document_id))
            except UnsafePath as exc:
                report.refused[document_id] = _reason(exc, document_id)
                seen.discard(document_id)
                if progress:
                    progress(1)
                continue
            except LoadError as exc:
                report.failed[document_id] = f"cannot read file: {_reason(exc, document_id)}"
                if progress:
                    progress(1)
                continue
            acl = manifest.acl_for(document_id)
            if manifest.rule_for(document_id) is None:
                report.unmatched.append(document_id)
            previous = known.get(document_id)
            if previous is not None and previous.content_hash == digest and not reindex:
                if previous.acl != acl:
                    self.set_acl(document_id, acl)
                    report.acl_updated.append(document_id)
                else:
                    report.unchanged.append(document_id)
                if progress:
                    progress(1)
                continue
            work.append((document_id, acl, facts))
        for document_id in sorted(set(known) - seen):
            self.delete(document_id)
            report.removed.append(document_id)

        def loaded(items: Iterable[_Pending | _Unloadable]) -> Iterator[_Pending]:
            for item in items:
                if isinstance(item, _Pending):
                    yield item
                    continue
                if item.refused:  # swapped for a link or a special file since the scan
                    report.refused[item.document_id] = item.reason
                    if item.document_id in known:
                        self.delete(item.document_id)
                        report.removed.append(item.document_id)
                else:
                    report.failed[item.document_id] = item.reason
                if progress:
                    progress(1)

        # Files are read, parsed and chunked ahead (in a thread) while a batch is embedded; every write,
        # report entry and progress call stays here, in the order a plain loop makes them.
        prepared = (self._load_file(root, document_id, acl, facts) for document_id, acl, facts in work)
        with read_ahead(prepared, limit=self._prefetch_batches * EMBED_BATCH_CHUNKS, weight=_chunk_count) as items:
            for done in self._embed_and_write(loaded(items), origin, report, on_chunks):
                if progress:
                    progress(done)
        # A file that could not be read or indexed this time keeps its old text for now, never its
        # old ACL: who may read it is the manifest's to say, and that needs no byte of the file.
        for document_id in report.failed:
            previous = known.get(document_id)
            if previous is not None and document_id not in report.removed:
                acl = manifest.acl_for(document_id)
                if previous.acl != acl:
                    self.set_acl(document_id, acl)
        # One refresh for the run (writes do not force one each): a segment per run, not per document.
        self._index.refresh(self._store_id)
        return report

    def _forget_folder(self, root: Path, shard: Shard) -> IndexReport | None:
        """The store's folder is gone: its documents and its manifest's groups go too (None: not this store's)."""
        documents = [d.id for d in self._catalog.list_documents(self._store_id, origin=f"folder:{root}")]
        if not documents:
            return None
        documents = [document_id for document_id in documents if shard.owns(document_id)]
        log.warning("store %s: folder %s is gone; removing its %d documents", self._store_id, root, len(documents))
        if shard.index == 0:
            self._access.replace_manifest_groups(self._store_id, {})
        report = IndexReport()
        for document_id in documents:
            self.delete(document_id)
            report.removed.append(document_id)
        return report

    # single documents (API pushes) ---------------------------------------------------
    def upsert_bytes(
        self,
        document_id: str,
        data: bytes,
        content_type: str,
        *,
        acl: Acl,
        title: str | None = None,
        source_uri: str = "",
        origin: str = "api",
        metadata: Mapping[str, str] | None = None,
        modified: datetime | None = None,
    ) -> IndexReport:
        """Index one document given as bytes; unchanged content (bytes, content type, ``metadata`` and
        ``modified`` alike) only updates the ACL.

        ``source_uri`` must be an http(s) URL or empty (``indexer.source_uris``), ``title`` one clean line
        (``indexer.documents.validate_title``), ``metadata`` valid custom metadata
        (``indexer.index.attributes``), ``modified`` a date with a zone: InvalidArgument, nothing written.
        """
        source_uri = validate_source_uri(source_uri)
        if title is not None:
            validate_title(title)
        facts = DocumentFacts.of(content_type, modified, metadata)
        report = IndexReport()
        digest = facts.digest(data)
        existing = self._catalog.get_document(self._store_id, document_id)
        if existing is not None and existing.content_hash == digest:
            if existing.acl != acl:
                self.set_acl(document_id, acl)
                report.acl_updated.append(document_id)
            else:
                report.unchanged.append(document_id)
            return report
        document = load_bytes(data, content_type, document_id)
        if title:
            document = LoadedDocument(document.text, title, document.blocks, document.content_type)
        pending = self._prepare(document_id, digest, acl, source_uri, document, facts)
        for _ in self._embed_and_write(iter([pending]), origin, report):
            pass
        return report

    def delete(self, document_id: str) -> None:
        """Remove a document from the index, then from the catalog."""
        self._index.delete_document(self._store_id, document_id)
        self._catalog.delete_document(self._store_id, document_id)

    def set_acl(self, document_id: str, acl: Acl) -> None:
        """Record the source's new ACL (effective at once unless an admin overrode it), then the index copy.

        If the index copy cannot be changed, the document is marked so that
        the next run re-indexes it (with the effective ACL), and the error is raised.
        """
        self.sync_index_acl(document_id, self._access.record_ingested_acl(self._store_id, document_id, acl))

    def sync_index_acl(self, document_id: str, effective: Acl) -> None:
        """Make the index copy of a document's ACL ``effective``; on failure mark it for re-indexing and raise."""
        try:
            self._index.set_document_acl(self._store_id, document_id, effective)
        except DocQAError:
            self._catalog.mark_for_reindex(self._store_id, document_id)
            raise

    # internals ------------------------------------------------------------------------
    def _load_file(self, root: Path, document_id: str, acl: Acl, facts: DocumentFacts) -> _Pending | _Unloadable:
        """Read, load and chunk one file of the folder; writes nothing, so it may run in the read-ahead thread."""
        path = root / document_id
        try:
            # Read again, the same safe way: what is hashed is what is indexed.
            data = read_inside(root, document_id)
            digest = facts.digest(data)  # before the mtime joins the facts: it is recorded, not hashed
            facts = replace(facts, modified=instant(modified_inside(root, document_id)))
            document = load_bytes(data, content_type_for(path) or "", path.name)
        except UnsafePath as exc:
            return _Unloadable(document_id, _reason(exc, document_id), refused=True)
        except LoadError as exc:
            return _Unloadable(document_id, exc.message, refused=False)
        return self._prepare(document_id, digest, acl, path.as_uri(), document, facts)

    def _prepare(
        self,
        document_id: str,
        digest: str,
        acl: Acl,
        source_uri: str,
        document: LoadedDocument,
        facts: DocumentFacts,
    ) -> _Pending:
        drafts = self._chunker.chunk(document)
        written = instant(self._clock())
        records = [
            ChunkRecord(
                chunk_id=f"{document_id}#{d.ordinal}",
                document_id=document_id,
                ordinal=d.ordinal,
                text=d.text,
                title=document.title,
                source_uri=source_uri,
                heading_path=d.heading_path,
                start=d.start,
                end=d.end,
                acl=acl,
                pages=d.pages,
                anchor=d.anchor,
                content_type=facts.content_type or document.content_type,
                modified=facts.modified,
                indexed_at=written,
                metadata=facts.metadata,
            )
            for d in drafts
        ]
        return _Pending(document_id, digest, acl, source_uri, document, records)

    def _embed_and_write(
        self,
        pending: Iterator[_Pending],
        origin: str,
        report: IndexReport,
        on_chunks: Progress | None = None,
    ) -> Iterator[int]:
        """Embed chunks of several documents per model call; write each document whole.

        Yields the number of documents of each batch written; ``on_chunks``
        gets the number of chunks of each batch embedded.
        """
        batch: list[_Pending] = []
        size = 0
        for item in pending:
            batch.append(item)
            size += len(item.records)
            if size >= EMBED_BATCH_CHUNKS:
                yield self._flush(batch, origin, report, on_chunks)
                batch, size = [], 0
        if batch:
            yield self._flush(batch, origin, report, on_chunks)

    def _flush(self, batch: list[_Pending], origin: str, report: IndexReport, on_chunks: Progress | None) -> int:
        texts = [r.text for item in batch for r in item.records]
        vectors = self._embedder.embed_documents(texts)
        if on_chunks:
            on_chunks(len(texts))
        # The index copy carries the ACL in force: an admin's override wins over the source's.
        effective = self._access.effective_acls(self._store_id, {item.document_id: item.acl for item in batch})
        position = 0
        for item in batch:
            acl = effective[item.document_id]
            records = [replace(r, vector=vectors[position + i], acl=acl) for i, r in enumerate(item.records)]
            position += len(records)
            try:
                if records:
                    self._index.upsert(self._store_id, records)
                else:
                    self._index.delete_document(self._store_id, item.document_id)
            except DocumentsRejected as exc:
                # Not recorded in the catalog, so the next run tries it again.
                report.failed[item.document_id] = exc.message
                continue
            self._access.record_document(
                DocumentRecord(
                    store_id=self._store_id,
                    id=item.document_id,
                    title=item.loaded.title,
                    source_uri=item.source_uri,
                    content_hash=item.content_hash,
                    text=item.loaded.text,
                    acl=item.acl,
                    origin=origin,
                    chunk_count=len(records),
                )
            )
            report.indexed.append(item.document_id)
            report.chunks += len(records)
        self._settle_index_acls([item for item in batch if item.document_id in report.indexed], effective)
        return len(batch)

    def _settle_index_acls(self, batch: list[_Pending], written: Mapping[str, Acl]) -> None:
        """Re-read the ACLs in force: an admin change made while the batch was written must reach the index copy.

        Without this, an override saved between reading the effective ACLs and
        the upsert would leave the index copy stale until the content changes.
        """
        now = self._access.effective_acls(self._store_id, {item.document_id: item.acl for item in batch})
        for document_id, acl in now.items():
            if acl != written[document_id]:
                self.sync_index_acl(document_id, acl)


def _shard_of_scan(found: ScanResult, shard: Shard) -> ScanResult:
    """The entries of ``found`` that are ``shard``'s (each entry is reported by one shard only)."""
    if shard == WHOLE:
        return found
    return replace(
        found,
        files=[name for name in found.files if shard.owns(name)],
        unsupported=[name for name in found.unsupported if shard.owns(name)],
        refused={name: why for name, why in found.refused.items() if shard.owns(name)},
    )


def _reason(error: LoadError, document_id: str) -> str:
    """The reason alone: the report names the entry already."""
    prefix = f"{document_id}: "
    return error.message[len(prefix) :] if error.message.startswith(prefix) else error.message
