from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from acl.errors import InvalidArgument
from acl.model import Acl
from indexer.index import StoreSpec
from indexer.ingest.pipeline import Ingestor
from service.access.state import AccessState
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder
from tests.unit.test_loaders import make_pdf

STORE = "docs"
MANIFEST = """
groups:
  finance: [user:alice]
documents:
  - match: "finance/**"
    allow: [group:finance]
  - match: "**"
    allow: [group:everyone]
"""


class Crash(Exception):
    pass


class CrashingEmbedder(FakeEmbedder):
    """Dies on the n-th call, as a killed process would."""

    def __init__(self, die_on_call: int) -> None:
        super().__init__()
        self.die_on_call = die_on_call

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if self.calls + 1 == self.die_on_call:
            raise Crash
        return super().embed_documents(texts)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "finance").mkdir(parents=True)
    (root / "acl.yaml").write_text(MANIFEST)
    (root / "finance" / "q3.md").write_text("# Q3\n\nRevenue was 48 million euros.\n")
    (root / "guide.txt").write_text("Vacation is 25 days.\n\nCarry over five days.\n")
    (root / "page.html").write_text("<html><title>Page</title><body><h1>Hi</h1><p>Security first.</p></body></html>")
    (root / "notes.xyz").write_text("ignored")
    return root


@pytest.fixture
def repo() -> SqlSettingsRepository:
    r = SqlSettingsRepository.from_url("sqlite://")
    r.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
    return r


def ingestor(index: FakeIndex, repo: SqlSettingsRepository, embedder: FakeEmbedder) -> Ingestor:
    index.ensure(StoreSpec(STORE, embedder.dimension))
    return Ingestor(index=index, catalog=repo, access=AccessState(repo, index), embedder=embedder, store_id=STORE)


def chunk_ids(index: FakeIndex) -> list[str]:
    hits = index.exact(
        STORE,
        np.eye(1, 64, dtype=np.float32)[0],
        10_000,
        {"field": "acl_allow", "operator": "in", "value": ["group:finance", "group:everyone"]},
    )
    return sorted(h.chunk.chunk_id for h in hits)


def test_index_then_unchanged_rerun_embeds_nothing(folder: Path, repo: SqlSettingsRepository) -> None:
    index, embedder = FakeIndex(), FakeEmbedder()
    report = ingestor(index, repo, embedder).index_folder(folder)
    assert sorted(report.indexed) == ["finance/q3.md", "guide.txt", "page.html"]
    assert report.skipped == ["notes.xyz"] and report.ok
    assert repo.acls(STORE, ["finance/q3.md"])["finance/q3.md"] == Acl.of(["group:finance"])
    assert repo.memberships(STORE)["user:alice"] == {"group:finance"}
    assert "user:alice" not in repo.memberships()  # a manifest's groups hold in its own store only
    before = embedder.embedded
    again = ingestor(index, repo, embedder).index_folder(folder)
    assert embedder.embedded == before
    assert sorted(again.unchanged) == ["finance/q3.md", "guide.txt", "page.html"]


def test_changed_file_reindexed_and_removed_file_deleted(folder: Path, repo: SqlSettingsRepository) -> None:
    index, embedder = FakeIndex(), FakeEmbedder()
    ingestor(index, repo, embedder).index_folder(folder)
    (folder / "guide.txt").write_text("Vacation is now 30 days.\n")
    (folder / "page.html").unlink()
    report = ingestor(index, repo, embedder).index_folder(folder)
    assert report.indexed == ["guide.txt"] and report.removed == ["page.html"]
    assert not any(c.startswith("page.html") for c in chunk_ids(index))
    assert repo.get_document(STORE, "page.html") is None
    assert "30 days" in repo.get_document(STORE, "guide.txt").text  # type: ignore[union-attr]


def test_manifest_change_updates_acl_without_embedding(folder: Path, repo: SqlSettingsRepository) -> None:
    index, embedder = FakeIndex(), FakeEmbedder()
    ingestor(index, repo, embedder).index_folder(folder)
    (folder / "acl.yaml").write_text(MANIFEST.replace("[group:finance]", "[user:bob]"))
    before = embedder.embedded
    report = ingestor(index, repo, embedder).index_folder(folder)
    assert report.acl_updated == ["finance/q3.md"] and embedder.embedded == before
    assert index.count(STORE, {"field": "acl_allow", "operator": "in", "value": ["user:bob"]}) > 0


def test_corrupt_file_is_reported_and_skipped(folder: Path, repo: SqlSettingsRepository) -> None:
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7 this is not really a pdf")
    report = ingestor(FakeIndex(), repo, FakeEmbedder()).index_folder(folder)
    assert "broken.pdf" in report.failed and "broken.pdf" not in report.indexed
    assert len(report.indexed) == 3 and report.ok


def test_nothing_indexable_is_not_ok(tmp_path: Path, repo: SqlSettingsRepository) -> None:
    (tmp_path / "acl.yaml").write_text(MANIFEST)
    (tmp_path / "broken.docx").write_bytes(b"not a zip")
    report = ingestor(FakeIndex(), repo, FakeEmbedder()).index_folder(tmp_path)
    assert not report.ok


def test_missing_manifest_is_a_clear_error(tmp_path: Path, repo: SqlSettingsRepository) -> None:
    (tmp_path / "a.txt").write_text("hello there")
    with pytest.raises(InvalidArgument, match="no ACL manifest"):
        ingestor(FakeIndex(), repo, FakeEmbedder()).index_folder(tmp_path)


def test_killed_run_resumes_with_no_duplicate_and_no_missing_chunk(
    folder: Path, repo: SqlSettingsRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    from indexer.ingest import pipeline

    monkeypatch.setattr(pipeline, "EMBED_BATCH_CHUNKS", 1)  # one document per model call
    for i in range(6):
        (folder / f"extra{i}.md").write_text(f"# Extra {i}\n\nParagraph {i} of extra text.\n")
    reference_index = FakeIndex()
    ingestor(reference_index, repo, FakeEmbedder()).index_folder(folder)
    expected = chunk_ids(reference_index)

    for die_on in (1, 2, 4, 7):
        fresh = SqlSettingsRepository.from_url("sqlite://")
        fresh.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
        index = FakeIndex()
        with pytest.raises(Crash):
            ingestor(index, fresh, CrashingEmbedder(die_on)).index_folder(folder)
        ingestor(index, fresh, FakeEmbedder()).index_folder(folder)
        got = chunk_ids(index)
        assert got == expected and len(got) == len(set(got))
        assert len(fresh.list_documents(STORE)) == len(reference_index_docs(repo))


def reference_index_docs(repo: SqlSettingsRepository) -> list[str]:
    return [d.id for d in repo.list_documents(STORE)]


class RejectingIndex(FakeIndex):
    """Refuses the chunks of one document, as OpenSearch may refuse a bulk item."""

    def upsert(self, store_id, chunks):  # type: ignore[no-untyped-def]
        from indexer.index.port import DocumentsRejected

        if any(c.document_id == "guide.txt" for c in chunks):
            raise DocumentsRejected("index unavailable: rejected guide.txt", ["guide.txt"])
        super().upsert(store_id, chunks)


class AclFailingIndex(FakeIndex):
    def set_document_acl(self, store_id, document_id, acl):  # type: ignore[no-untyped-def]
        from indexer.errors import IndexUnavailable

        raise IndexUnavailable("index unavailable: down")


def test_rejected_document_is_reported_and_retried_next_run(folder: Path, repo: SqlSettingsRepository) -> None:
    index = RejectingIndex()
    report = ingestor(index, repo, FakeEmbedder()).index_folder(folder)
    assert "guide.txt" in report.failed and sorted(report.indexed) == ["finance/q3.md", "page.html"]
    assert repo.get_document(STORE, "guide.txt") is None
    healthy = FakeIndex()
    again = ingestor(healthy, repo, FakeEmbedder()).index_folder(folder)
    assert "guide.txt" in again.indexed


def test_failed_index_acl_update_marks_document_for_reindex(folder: Path, repo: SqlSettingsRepository) -> None:
    from indexer.errors import IndexUnavailable

    ingestor(FakeIndex(), repo, FakeEmbedder()).index_folder(folder)
    (folder / "acl.yaml").write_text(MANIFEST.replace("[group:finance]", "[user:bob]"))
    with pytest.raises(IndexUnavailable):
        ingestor(AclFailingIndex(), repo, FakeEmbedder()).index_folder(folder)
    assert repo.acls(STORE, ["finance/q3.md"])["finance/q3.md"] == Acl.of(["user:bob"])  # in force at once
    index = FakeIndex()
    report = ingestor(index, repo, FakeEmbedder()).index_folder(folder)
    assert "finance/q3.md" in report.indexed
    assert index.count(STORE, {"field": "acl_allow", "operator": "in", "value": ["user:bob"]}) > 0


def test_a_file_that_cannot_be_read_still_takes_the_manifests_narrower_acl(
    folder: Path, repo: SqlSettingsRepository, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HR restricts guide.txt in the manifest and on disk (chmod 600 by its owner, so the indexer gets
    # EACCES). The run reports guide.txt as failed and keeps its old text: that must not keep its old ACL.
    import indexer.ingest.pipeline as pipeline
    from indexer.errors import LoadError
    from indexer.ingest.safe_scan import read_inside as real

    index = FakeIndex()
    ingestor(index, repo, FakeEmbedder()).index_folder(folder)
    narrowed = MANIFEST.replace('  - match: "**"', '  - match: "guide.txt"\n    allow: [user:bob]\n  - match: "**"')
    (folder / "acl.yaml").write_text(narrowed)

    def denied(root: Path, relative: str, max_bytes: int | None = None) -> bytes:
        if relative == "guide.txt":
            raise LoadError("guide.txt: cannot open (Permission denied)")
        return real(root, relative, max_bytes)

    monkeypatch.setattr(pipeline, "read_inside", denied)
    report = ingestor(index, repo, FakeEmbedder()).index_folder(folder)
    assert "guide.txt" in report.failed
    assert repo.acls(STORE, ["guide.txt"])["guide.txt"] == Acl.of(["user:bob"])
    everyone = {"field": "acl_allow", "operator": "in", "value": ["group:everyone"]}
    assert {c.acl for c in index.chunks[STORE].values() if c.document_id == "guide.txt"} == {Acl.of(["user:bob"])}
    assert index.count(STORE, everyone) > 0  # page.html is still everyone's


def test_a_rejected_document_still_takes_the_manifests_narrower_acl(folder: Path, repo: SqlSettingsRepository) -> None:
    index = FakeIndex()
    ingestor(index, repo, FakeEmbedder()).index_folder(folder)
    (folder / "guide.txt").write_text("Vacation is now 30 days.\n")
    narrowed = MANIFEST.replace('  - match: "**"', '  - match: "guide.txt"\n    allow: [user:bob]\n  - match: "**"')
    (folder / "acl.yaml").write_text(narrowed)
    rejecting = RejectingIndex()
    rejecting.chunks, rejecting.vectors, rejecting.dimensions = index.chunks, index.vectors, index.dimensions
    report = ingestor(rejecting, repo, FakeEmbedder()).index_folder(folder)
    assert "guide.txt" in report.failed
    assert repo.acls(STORE, ["guide.txt"])["guide.txt"] == Acl.of(["user:bob"])
    assert {c.acl for c in index.chunks[STORE].values() if c.document_id == "guide.txt"} == {Acl.of(["user:bob"])}


def test_chunks_carry_pages_and_anchors_and_reindex_brings_them_to_older_documents(
    folder: Path, repo: SqlSettingsRepository
) -> None:
    (folder / "manual.html").write_text(
        '<html><body><section id="setup"><h2>Setup<a class="headerlink" href="#setup">¶</a></h2>'
        "<p>Run the installer.</p></section></body></html>"
    )
    (folder / "report.pdf").write_bytes(make_pdf([["Revenue grew."], ["Costs fell."]]))
    index, embedder = FakeIndex(), FakeEmbedder()
    ingestor(index, repo, embedder).index_folder(folder)
    stored = index.chunks[STORE]
    assert [(c.anchor, c.pages) for c in stored.values() if c.document_id == "manual.html"] == [("setup", ())]
    assert "¶" not in stored["manual.html#0"].text
    assert [c.pages for c in stored.values() if c.document_id == "report.pdf"] == [(1, 2)]
    # Chunks written before pages and anchors existed; an unchanged file keeps them so on a plain run.
    for chunk_id, chunk in list(stored.items()):
        stored[chunk_id] = dataclasses.replace(chunk, pages=(), anchor="")
    assert sorted(ingestor(index, repo, embedder).index_folder(folder).indexed) == []
    report = ingestor(index, repo, embedder).index_folder(folder, reindex=True)
    assert sorted(report.indexed) == ["finance/q3.md", "guide.txt", "manual.html", "page.html", "report.pdf"]
    assert index.chunks[STORE]["manual.html#0"].anchor == "setup"
    assert index.chunks[STORE]["report.pdf#0"].pages == (1, 2)
