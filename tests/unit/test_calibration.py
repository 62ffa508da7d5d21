"""The calibration run over a small store with the fake index and embedder, and applying its proposal."""

from __future__ import annotations

import json
from random import Random

import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, StoreSpec
from service.access.admin import CALIBRATION_AUDIT_CLASS, Admin
from service.domain.store import Store
from service.persistence.sql_settings import SqlSettingsRepository
from service.query.calibration import MAX_SAMPLE, Calibrator
from service.query.probes import document_probes, heading_probe, sentence_probe
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder

STORE = "s"
TOPICS = [
    ("Vacation policy", "Carry-over", "Up to five unused vacation days may be carried over into the next year."),
    ("Travel expenses", "Meals", "Meals while travelling are reimbursed up to sixty euros per day with receipts."),
    ("On-call rotation", "Paging", "Acknowledge every production page within fifteen minutes and open an incident."),
    ("Security rules", "Passwords", "Passwords need sixteen characters and rotate when a breach is suspected."),
    ("Quarterly results", "Revenue", "Revenue in the third quarter grew to forty-eight million with steady margins."),
    ("Salary bands", "Engineering", "Engineering salary bands run from level one to level six with yearly reviews."),
]
#: Nobody may read these documents: the calibration, an admin's, still sees every chunk.
NOBODY = Acl.of(["user:nobody"], ["group:everyone"])


World = tuple[SqlSettingsRepository, FakeIndex, FakeEmbedder]


@pytest.fixture
def world() -> World:
    repo = SqlSettingsRepository.from_url("sqlite://")
    repo.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 4))
    index, embedder = FakeIndex(), FakeEmbedder()
    index.ensure(StoreSpec(STORE, embedder.dimension))
    for number, (title, heading, sentence) in enumerate(TOPICS):
        document_id = f"doc-{number}.md"
        texts = [f"{title}. This page explains the {title.lower()} of the company.", sentence]
        chunks = [
            ChunkRecord(
                chunk_id=f"{document_id}#{ordinal}",
                document_id=document_id,
                ordinal=ordinal,
                text=text,
                title=title,
                source_uri=f"file:///{document_id}",
                heading_path=(title,) if ordinal == 0 else (title, heading),
                start=0,
                end=len(text),
                acl=NOBODY,
                vector=vector,
            )
            for ordinal, (text, vector) in enumerate(zip(texts, embedder.embed_documents(texts), strict=True))
        ]
        index.upsert(STORE, chunks)
        repo.save_document(DocumentRecord(STORE, document_id, title, "", "h", " ".join(texts), NOBODY, chunk_count=2))
    return repo, index, embedder


def _calibrator(world: World) -> Calibrator:
    repo, index, embedder = world
    return Calibrator(stores=repo, catalog=repo, index=index, embedder_for=lambda _: embedder)


def test_a_store_nobody_may_read_still_calibrates_over_all_its_chunks(world: World) -> None:
    report = _calibrator(world).run(STORE)
    assert (report.documents, report.documents_sampled, report.chunks) == (6, 6, 12)
    assert report.probes.titles == 6 and report.probes.headings >= 6 and report.probes.sentences == 6
    assert report.answerable.count == report.probes.total
    assert report.off_topic.count >= 60
    # Probes share words with the store's text; off-topic questions share none.
    assert report.answerable.at(10) > report.off_topic.at(95)
    assert report.separation.method == "separated"
    at_level = report.proposed.score_for(report.anchor_level)
    assert at_level == pytest.approx(report.separation.cut, abs=1e-4)
    assert report.current.minimum == 0.1 and report.current.maximum == 0.6
    assert any("rough" in w for w in report.warnings)  # 6 documents
    assert not report.applied


def test_the_report_holds_numbers_only(world: World) -> None:
    shown = json.dumps(_calibrator(world).run(STORE).to_dict())
    for title, heading, sentence in TOPICS:
        for text in (title, heading, sentence[:30]):
            assert text not in shown


def test_the_same_store_calibrates_the_same_way_twice(world: World) -> None:
    assert _calibrator(world).run(STORE) == _calibrator(world).run(STORE)


def test_sample_bounds_the_documents_drawn(world: World) -> None:
    report = _calibrator(world).run(STORE, sample=2)
    assert report.documents == 6 and report.documents_sampled == 2 and report.probes.titles == 2


@pytest.mark.parametrize("bad", [0, -1, MAX_SAMPLE + 1, True, "10", 2.5])
def test_a_bad_sample_is_refused(world: World, bad: object) -> None:
    with pytest.raises(InvalidArgument, match="sample must be an integer"):
        _calibrator(world).run(STORE, sample=bad)  # type: ignore[arg-type]


def test_an_unknown_store_is_not_found(world: World) -> None:
    with pytest.raises(NotFound, match="store 'nope' not found"):
        _calibrator(world).run("nope")


def test_a_store_without_chunks_is_a_clear_error(world: World) -> None:
    repo, index, _ = world
    repo.create_store(Store("empty", "empty", "fake", 0.5, 0.1, 0.6, 4))
    repo.create_store(Store("never", "never", "fake", 0.5, 0.1, 0.6, 4))
    index.ensure(StoreSpec("empty", 64))  # an index, no chunk; "never" has no index at all
    for store in ("empty", "never"):
        with pytest.raises(InvalidArgument, match=f"store {store} has no indexed chunks to calibrate from"):
            _calibrator(world).run(store)


def test_applying_stores_the_scale_and_audits_who_did(world: World) -> None:
    repo = world[0]
    report = _calibrator(world).run(STORE)
    store = Admin(repo).apply_calibration(report, "root", "cli")
    assert (store.min_threshold, store.max_threshold) == (report.proposed.minimum, report.proposed.maximum)
    assert repo.get_store(STORE) == store
    [record] = repo.audit_records("root")
    assert (record.query_class, record.store_id, record.interface, record.outcome) == (
        CALIBRATION_AUDIT_CLASS,
        STORE,
        "cli",
        "OK",
    )
    assert record.threshold == pytest.approx(report.proposed.score_for(0.5))
    assert record.counts() == (6, 0)


def test_probes_from_headings_and_sentences() -> None:
    assert heading_probe(("Vacation policy", "Carry-over")) == "Vacation policy Carry-over"
    assert heading_probe(("Handbook", "How to request time off")) == "How to request time off"
    assert heading_probe(("", "  ")) is None
    # A short heading alone could be any document's: its parents, then the title, come first.
    assert heading_probe(("See Also",), "CREATE VIEW") == "CREATE VIEW See Also"
    assert heading_probe(("Description", "Note"), "CREATE CAST") == "CREATE CAST Description Note"
    assert heading_probe(("9.23.4. ANY / SOME",), "Subquery Expressions") == "Subquery Expressions ANY / SOME"
    assert heading_probe(("A word about things",), "T") == "A word about things"
    sentence = "Up to five unused days may be carried over into the next calendar year."
    words = sentence.split(" ")
    probe = sentence_probe(f"## Carry-over\n\n{sentence} Another sentence follows here.", Random(1))
    assert probe is not None
    kept = probe.split()
    assert len(kept) == len(words) - round(len(words) * 0.25) and all(w in words for w in kept)
    assert sentence_probe("Too short.", Random(1)) is None
    assert sentence_probe("Prev | Up | Next\n\n| 12 | 14 | 99 | 1.5 | x | y | z | w |", Random(1)) is None


def test_a_document_repeats_no_probe() -> None:
    text = "Security rules apply to every laptop we own."
    chunk = ChunkRecord("d#0", "d", 0, text, "T", "", ("Security",), 0, len(text), Acl())
    titles, headings, sentences = document_probes("Security", [chunk], Random(0))
    assert titles == ["Security"] and headings == [] and len(sentences) == 1
