"""A folder run that reads and chunks files ahead in a thread leaves exactly what a one-thread run leaves."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from indexer.errors import LoadError, UnsafePath
from indexer.index import StoreSpec
from indexer.ingest import pipeline
from indexer.ingest.pipeline import IndexReport, Ingestor
from indexer.ingest.safe_scan import read_inside as real_read_inside
from service.access.state import AccessState
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder
from tests.unit.test_loaders import make_pdf
from tests.unit.test_pipeline import MANIFEST, STORE, Crash, CrashingEmbedder

WHEN = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)


@dataclass
class Corpus:
    root: Path
    reads: dict[str, int]

    def run(self, ingestor: Ingestor, **options: Any) -> IndexReport:
        """One folder run; each run reads each file twice (to hash it, then to load it)."""
        self.reads.clear()
        return ingestor.index_folder(self.root, **options)


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Corpus:
    """Good files of every kind, a corrupt PDF, and a file the indexer may no longer read and one swapped for a
    link, each between the scan and the load."""
    root = tmp_path / "corpus"
    (root / "finance").mkdir(parents=True)
    (root / "acl.yaml").write_text(MANIFEST)
    (root / "finance" / "q3.md").write_text("# Q3\n\nRevenue was 48 million euros.\n\n## Costs\n\nCosts fell.\n")
    (root / "guide.txt").write_text("Vacation is 25 days.\n\nCarry over five days.\n")
    (root / "page.html").write_text("<html><title>Page</title><body><h1>Hi</h1><p>Security first.</p></body></html>")
    (root / "report.pdf").write_bytes(make_pdf([["Revenue grew."], ["Costs fell."]]))
    (root / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    (root / "secret.txt").write_text("HR only.\n")
    (root / "swapped.txt").write_text("Replaced by a link between the scan and the read.\n")
    for i in range(12):
        (root / f"extra{i:02d}.md").write_text(f"# Extra {i}\n\n" + f"Paragraph {i} of extra text. " * (3 + i) + "\n")

    reads: dict[str, int] = {}

    def guarded(folder: Path, relative: str, max_bytes: int | None = None) -> bytes:
        reads[relative] = reads.get(relative, 0) + 1
        if relative == "secret.txt" and reads[relative] == 2:  # chmod 600 since the scan
            raise LoadError("secret.txt: cannot open (Permission denied)")
        if relative == "swapped.txt" and reads[relative] == 2:  # a link now
            raise UnsafePath("swapped.txt: a symbolic link, not followed")
        return real_read_inside(folder, relative, max_bytes)

    for path in root.rglob("*"):
        os.utime(path, (WHEN.timestamp(), WHEN.timestamp()))
    monkeypatch.setattr(pipeline, "read_inside", guarded)
    return Corpus(root, reads)


def new_repo() -> SqlSettingsRepository:
    repo = SqlSettingsRepository.from_url("sqlite://")
    repo.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
    return repo


def ingestor(index: FakeIndex, repo: SqlSettingsRepository, embedder: FakeEmbedder, prefetch: int) -> Ingestor:
    index.ensure(StoreSpec(STORE, embedder.dimension))
    return Ingestor(
        index=index,
        catalog=repo,
        access=AccessState(repo, index),
        embedder=embedder,
        store_id=STORE,
        clock=lambda: WHEN,
        prefetch_batches=prefetch,
    )


def read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "docqa-read-ahead"]


def stored(index: FakeIndex, repo: SqlSettingsRepository) -> dict[str, Any]:
    """Everything a run leaves: chunks with their vectors and ACLs, catalog rows, the ACLs in force."""
    documents = repo.list_documents(STORE)
    return {
        "chunks": dict(index.chunks[STORE]),
        "vectors": {k: v.tolist() for k, v in index.vectors[STORE].items()},
        "documents": sorted(documents, key=lambda d: d.id),
        "acls": repo.acls(STORE, [d.id for d in documents]),
    }


def restore(path: Path, text: str) -> None:
    """Put a file back as the fixture made it, modification time included (the index records it)."""
    path.write_text(text)
    os.utime(path, (WHEN.timestamp(), WHEN.timestamp()))


def run_twice(corpus: Corpus, prefetch: int) -> tuple[list[IndexReport], list[list[str]], dict[str, Any]]:
    """A first run, then a second after changes (one file edited, one removed); reports, progress, the store."""
    index, repo, root = FakeIndex(), new_repo(), corpus.root
    reports, progress = [], []
    for step in range(2):
        if step == 1:
            restore(root / "guide.txt", "Vacation is now 30 days.\n")
            (root / "extra03.md").unlink()
        calls: list[str] = []
        report = corpus.run(
            ingestor(index, repo, FakeEmbedder(), prefetch),
            progress=lambda n, calls=calls: calls.append(f"files {n}"),  # type: ignore[misc]
            on_chunks=lambda n, calls=calls: calls.append(f"chunks {n}"),  # type: ignore[misc]
        )
        reports.append(report)
        progress.append(calls)
    restore(root / "extra03.md", "# Extra 3\n\n" + "Paragraph 3 of extra text. " * 6 + "\n")
    restore(root / "guide.txt", "Vacation is 25 days.\n\nCarry over five days.\n")
    return reports, progress, stored(index, repo)


@pytest.mark.parametrize(("prefetch", "batch_chunks"), [(2, 256), (1, 1), (2, 3)])
def test_read_ahead_leaves_the_store_and_report_a_one_thread_run_leaves(
    mixed: Corpus, monkeypatch: pytest.MonkeyPatch, prefetch: int, batch_chunks: int
) -> None:
    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", batch_chunks)  # small batches: the producer waits often
    one_thread = run_twice(mixed, prefetch=0)
    ahead = run_twice(mixed, prefetch=prefetch)
    assert ahead == one_thread
    first = ahead[0][0]
    assert "broken.pdf" in first.failed and "secret.txt" in first.failed and "swapped.txt" in first.refused
    second = ahead[0][1]
    assert len(first.indexed) == 16 and second.indexed == ["guide.txt"] and second.removed == ["extra03.md"]
    assert read_ahead_threads() == []


class GatedEmbedder(FakeEmbedder):
    """Its first call waits until the file after the next batch has been read: only a read-ahead gets there."""

    def __init__(self, read: threading.Event) -> None:
        super().__init__()
        self.read = read
        self.overlapped: bool | None = None

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.overlapped is None:
            self.overlapped = self.read.wait(timeout=30)
        return super().embed_documents(texts)


def test_files_are_read_while_a_batch_is_embedded(mixed: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", 1)  # one document a batch
    read = threading.Event()
    guarded = pipeline.read_inside

    def watched(folder: Path, relative: str, max_bytes: int | None = None) -> bytes:
        if relative == "extra01.md" and threading.current_thread().name == "docqa-read-ahead":
            read.set()  # the file after extra00.md's batch, read by the thread while the encoder works
        return guarded(folder, relative, max_bytes)

    monkeypatch.setattr(pipeline, "read_inside", watched)
    embedder = GatedEmbedder(read)
    report = mixed.run(ingestor(FakeIndex(), new_repo(), embedder, prefetch=2))
    assert embedder.overlapped is True
    assert len(report.indexed) == 16


def test_a_producer_error_is_raised_after_what_came_before_it_and_ends_the_thread(
    mixed: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", 1)
    real_load = pipeline.load_bytes

    def buggy(data: bytes, content_type: str, name: str) -> Any:
        if name == "extra05.md":
            raise RuntimeError("loader bug")
        return real_load(data, content_type, name)

    monkeypatch.setattr(pipeline, "load_bytes", buggy)
    left = []
    for prefetch in (0, 2):
        index, repo = FakeIndex(), new_repo()
        with pytest.raises(RuntimeError, match="loader bug"):
            mixed.run(ingestor(index, repo, FakeEmbedder(), prefetch))
        assert read_ahead_threads() == []
        left.append(stored(index, repo))
    assert left[1] == left[0]
    assert [d.id for d in left[1]["documents"]] == [f"extra{i:02d}.md" for i in range(5)]


def test_an_encoder_failure_leaves_whole_documents_and_ends_the_thread(
    mixed: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", 1)
    for die_on in (1, 3, 8):
        left = []
        for prefetch in (0, 2):
            index, repo = FakeIndex(), new_repo()
            with pytest.raises(Crash):
                mixed.run(ingestor(index, repo, CrashingEmbedder(die_on), prefetch))
            assert read_ahead_threads() == []
            left.append(stored(index, repo))
            # Every recorded document has all its chunks in the index, and no chunk is without its document.
            counts = {d.id: d.chunk_count for d in left[-1]["documents"]}
            written: dict[str, int] = {}
            for chunk in left[-1]["chunks"].values():
                written[chunk.document_id] = written.get(chunk.document_id, 0) + 1
            assert written == counts and len(counts) == die_on - 1
        assert left[1] == left[0]


def test_an_interrupt_in_the_caller_ends_the_thread(mixed: Corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", 1)

    def interrupted(_done: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        mixed.run(ingestor(FakeIndex(), new_repo(), FakeEmbedder(), prefetch=2), on_chunks=interrupted)
    assert read_ahead_threads() == []


@pytest.mark.parametrize(("prefetch", "reader"), [(0, "MainThread"), (1, "docqa-read-ahead")])
def test_the_setting_chooses_who_reads_the_files(
    mixed: Corpus, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prefetch: int, reader: str
) -> None:
    from service.bootstrap import build_app
    from service.config import Settings

    readers: set[str] = set()
    guarded = pipeline.load_bytes

    def watched(data: bytes, content_type: str, name: str) -> Any:
        readers.add(threading.current_thread().name)
        return guarded(data, content_type, name)

    monkeypatch.setattr(pipeline, "load_bytes", watched)
    settings = Settings(data_dir=tmp_path / "data", indexing={"prefetch_batches": prefetch})
    app = build_app(settings, embedder_factory=lambda _: FakeEmbedder())
    try:
        report = mixed.run(app.ingestor(STORE))
    finally:
        app.close()
    assert readers == {reader} and len(report.indexed) == 16
