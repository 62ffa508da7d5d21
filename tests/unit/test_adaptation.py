"""The parts of ``docqa adapt`` that need no model: pseudo-queries, the blended order, the model folder's checks."""

from __future__ import annotations

import json
from pathlib import Path
from random import Random

import numpy as np
import pytest

from acl.model import Acl
from indexer.index import ChunkRecord, SearchHit
from service.adaptation.evaluation import Ranks, rank_of
from service.adaptation.pseudo_queries import chunk_queries, sample_queries
from service.ranking.adapted import blended_order, standardised
from service.ranking.adapted_model import (
    MANIFEST_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    AdaptedModelError,
    Manifest,
    install,
    model_folder,
    sha256,
    verify,
)
from service.ranking.port import Reranked

PROSE = (
    "Unused vacation days may be carried over into the first quarter of the next year. "
    "Requests to carry over more than five days need the approval of your manager in writing."
)


def _chunk(
    doc: str, ordinal: int, text: str = PROSE, path: tuple[str, ...] = ("Vacation policy", "Carry-over")
) -> ChunkRecord:
    return ChunkRecord(
        f"{doc}#{ordinal}", doc, ordinal, text, "Employee handbook", "", path, 0, len(text), Acl.of(["group:everyone"])
    )


def test_a_short_heading_is_read_with_its_parents_and_a_generic_one_is_skipped() -> None:
    queries = chunk_queries(_chunk("h.md", 0), "Employee handbook", Random(1))
    heading = [q for q in queries if q.kind == "heading"]
    assert [q.query for q in heading] == ["Employee handbook Vacation policy Carry-over"]
    generic = chunk_queries(_chunk("h.md", 0, path=("Description",)), "", Random(1))
    assert not [q for q in generic if q.kind == "heading"]


def test_a_sentence_query_drops_words_and_its_positive_is_the_rest_of_the_chunk() -> None:
    (sentence,) = [q for q in chunk_queries(_chunk("h.md", 0), "", Random(3)) if q.kind == "sentence"]
    words = sentence.query.split()
    source = next(s for s in PROSE.split(". ") if set(words) <= set(s.split()) | {s.split()[-1] + "."})
    assert 0 < len(words) < len(source.split())
    assert source.rstrip(".") not in sentence.text, "the positive is the chunk without the query's sentence"
    assert sentence.text.strip()


def test_queries_are_drawn_round_the_documents_without_repeats_and_the_same_with_the_same_seed() -> None:
    big = [_chunk("manual.md", i, text=f"Section {i}. " + PROSE, path=(f"Topic {i} of the manual",)) for i in range(40)]
    small = [_chunk(f"page{i}.md", 0, path=(f"Page {i} subject",)) for i in range(3)]
    documents = [("Manual", big)] + [(f"Page {i}", [c]) for i, c in enumerate(small)]
    picked = sample_queries(documents, 12, Random(7))
    assert len(picked) == 12 and len({q.query.casefold() for q in picked}) == 12
    assert {q.document_id for q in picked} >= {"page0.md", "page1.md", "page2.md"}, "small pages are not crowded out"
    assert [q.query for q in sample_queries(documents, 12, Random(7))] == [q.query for q in picked]


def _hits(n: int) -> list[SearchHit]:
    return [SearchHit(_chunk(f"d{i}.md", 0), 1.0 - i / 10) for i in range(n)]


def test_the_blend_reorders_only_the_top_depth_and_returns_every_candidate_once() -> None:
    hits = _hits(6)
    offline = [Reranked(h, 6.0 - i) for i, h in enumerate(hits)]
    model = np.array([0.0, 0.0, 5.0])  # the model likes the third
    order = blended_order(hits, offline, model, blend=1.0)
    assert [r.hit.chunk.document_id for r in order][:3] == ["d2.md", "d0.md", "d1.md"]
    assert [r.hit.chunk.document_id for r in order][3:] == ["d3.md", "d4.md", "d5.md"]
    scores = [r.score for r in order]
    assert scores == sorted(scores, reverse=True)
    assert [r.hit for r in blended_order(hits, offline, model, blend=0.0)] == hits
    assert not standardised(np.ones(4)).any()


def test_ranks_count_documents() -> None:
    order = [Reranked(h, 0.0) for h in _hits(3)]
    assert rank_of(order, "d1.md") == 2 and rank_of(order, "nowhere.md") == 0
    r = Ranks.of([1, 2, 0, 6])
    assert (r.hit1, r.hit5, round(r.mrr, 4)) == (0.25, 0.5, round((1 + 0.5 + 1 / 6) / 4, 4))


def _folder(tmp_path: Path, store: str = "docs") -> Path:
    folder = tmp_path / "new"
    folder.mkdir()
    (folder / MODEL_FILE).write_bytes(b"not really onnx" * 10)
    (folder / TOKENIZER_FILE).write_text("{}")
    manifest = Manifest(
        store_id=store, base_model="all-MiniLM-L6-v2", layers=3, max_tokens=128, blend=0.5, depth=10,
        scope="readable by group:everyone", trained_at="2026-11-28T00:00:00+00:00",
        model_sha256=sha256(folder / MODEL_FILE), model_bytes=(folder / MODEL_FILE).stat().st_size,
        tokenizer_sha256=sha256(folder / TOKENIZER_FILE),
    )  # fmt: skip
    (folder / MANIFEST_FILE).write_text(manifest.to_json())
    return folder


def test_a_whole_folder_is_installed_and_the_old_one_kept(tmp_path: Path) -> None:
    install(_folder(tmp_path), tmp_path / "data", "docs")
    target = model_folder(tmp_path / "data", "docs")
    assert verify(target, "docs").blend == 0.5
    install(_folder(tmp_path), tmp_path / "data", "docs")
    assert target.with_name("model.previous").is_dir()


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("checksum", "does not match its checksum"),
        ("size", "bytes, the manifest says"),
        ("store", "trained for store 'other'"),
        ("format", "this version reads format 1"),
        ("json", "unreadable manifest"),
        ("missing", "tokenizer.json is missing"),
        ("blend", "blend or depth out of range"),
    ],
)
def test_a_folder_that_is_not_whole_is_refused_and_never_installed(tmp_path: Path, damage: str, words: str) -> None:
    folder = _folder(tmp_path)
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    if damage == "checksum":
        (folder / MODEL_FILE).write_bytes(b"NOT really onnx" * 10)
    elif damage == "size":
        (folder / MODEL_FILE).write_bytes(b"x")
    elif damage == "missing":
        (folder / TOKENIZER_FILE).unlink()
    elif damage == "json":
        (folder / MANIFEST_FILE).write_text("{")
    else:
        manifest.update({"store": {"store_id": "other"}, "format": {"format": 2}, "blend": {"blend": 1.5}}[damage])
        (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    with pytest.raises(AdaptedModelError, match=words):
        verify(folder, "docs")
    with pytest.raises(AdaptedModelError):
        install(folder, tmp_path / "data", "docs")
    assert not model_folder(tmp_path / "data", "docs").exists()
