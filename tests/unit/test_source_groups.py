"""An answer's sources grouped per document, with pages, anchors and links, built by the engine."""

from __future__ import annotations

from collections.abc import Sequence

from acl.model import Acl
from indexer.documents import DocumentRecord
from indexer.index import ChunkRecord, SearchHit
from service.domain.queries import Caller, SourceChunk, VectorQuery, group_by_document
from service.domain.store import Store
from service.generation.prompting import TokenBudget
from service.query.answering import Answering
from service.query.context import QueryContext, Scope
from tests.fakes_service import RecordingGenerator
from tests.unit.engine_world import STORE, World, make_world

BASE = "https://intranet.example/docs"
EVERYONE = Acl.of(["group:everyone"])


def chunk(
    document_id: str,
    ordinal: int,
    score: float | None,
    *,
    pages: tuple[int, ...] = (),
    anchor: str = "",
    source_uri: str = "",
    link: str | None = None,
) -> SourceChunk:
    return SourceChunk(
        document_id=document_id,
        chunk_id=f"{document_id}#{ordinal}",
        title=document_id.upper(),
        source_uri=source_uri,
        text=f"text {ordinal}",
        heading_path=(),
        score=score,
        relevance=None if score is None else min(max(score, 0.0), 1.0),
        start=0,
        end=6,
        pages=pages,
        anchor=anchor,
        link=link,
    )


def test_groups_follow_the_rank_order_of_each_first_chunk() -> None:
    ranked = [
        chunk("b.pdf", 4, 0.9, pages=(7, 8)),
        chunk("a.html", 0, 0.8, anchor="intro"),
        chunk("b.pdf", 1, 0.95, pages=(2,)),  # a higher score ranked lower (a reranker's order): order is kept
        chunk("c.md", 0, None),
        chunk("a.html", 2, 0.5, anchor="setup"),
        chunk("b.pdf", 9, 0.1, pages=(8, 12)),
    ]
    groups = group_by_document(ranked, None)
    assert [g.document_id for g in groups] == ["b.pdf", "a.html", "c.md"]
    assert [c.chunk_id for c in groups[0].chunks] == ["b.pdf#4", "b.pdf#1", "b.pdf#9"]
    assert [c.chunk_id for c in groups[1].chunks] == ["a.html#0", "a.html#2"]
    assert groups[0].pages == (2, 7, 8, 12) and groups[1].pages == () and groups[2].pages == ()
    assert (groups[0].best_score, groups[0].best_relevance) == (0.95, 0.95)
    assert (groups[1].best_score, groups[1].best_relevance) == (0.8, 0.8)
    assert (groups[2].best_score, groups[2].best_relevance) == (None, None)  # unscored (a whole document)
    assert groups[0].title == "B.PDF"
    # Every chunk is in exactly one group; nothing else is.
    assert sorted(c.chunk_id for g in groups for c in g.chunks) == sorted(c.chunk_id for c in ranked)
    assert group_by_document([], BASE) == ()


def test_document_links_have_no_fragment() -> None:
    pdf = [chunk("guides/b.pdf", 1, 0.9, pages=(3,), source_uri="file:///srv/guides/b.pdf")]
    web = [chunk("h", 0, 0.9, anchor="s1", source_uri="https://cms.example/h", link="https://cms.example/h#s1")]
    local = [chunk("x.md", 0, 0.9, source_uri="file:///srv/x.md")]
    assert group_by_document(pdf, BASE)[0].link == f"{BASE}/guides/b.pdf"
    assert group_by_document(pdf, None)[0].link is None  # a path of the indexing host
    assert group_by_document(web, None)[0].link == "https://cms.example/h"
    assert group_by_document(local, None)[0].link is None


def test_to_dict_shows_groups_and_hides_file_paths_from_remote_callers() -> None:
    ranked = [chunk("a.pdf", 0, 0.7, pages=(1, 2), source_uri="file:///srv/a.pdf")]
    group = group_by_document(ranked, None)[0]
    remote, local = group.to_dict(), group.to_dict(local=True)
    assert remote == {
        "document_id": "a.pdf",
        "title": "A.PDF",
        "source_uri": "",
        "link": None,
        "best_score": 0.7,
        "best_relevance": 0.7,
        "pages": [1, 2],
        "chunks": [ranked[0].to_dict()],
    }
    assert local["source_uri"] == "file:///srv/a.pdf" and local["chunks"][0]["source_uri"] == "file:///srv/a.pdf"
    assert ranked[0].to_dict() | {"pages": [1, 2], "anchor": "", "link": None} == ranked[0].to_dict()


# ---------------------------------------------------------------------------------------------- through the engine
def _records(
    world: World, document_id: str, texts: Sequence[str], *, pages: Sequence[int] = (), anchor: str = ""
) -> None:
    """Chunks with a page each (``pages[i]``) or an anchor each (``anchor-i``), as the indexer stores PDFs and HTML."""
    vectors = world.embedder.embed_documents(list(texts))
    uri = f"file:///srv/docs/{document_id}"
    records = [
        ChunkRecord(
            chunk_id=f"{document_id}#{i}",
            document_id=document_id,
            ordinal=i,
            text=text,
            title=document_id.title(),
            source_uri=uri,
            heading_path=(),
            start=0,
            end=len(text),
            acl=EVERYONE,
            pages=tuple(pages[i : i + 1]),
            anchor=f"{anchor}-{i}" if anchor else "",
            vector=vectors[i],
        )
        for i, text in enumerate(texts)
    ]
    world.index.upsert(STORE, records)
    world.repo.save_document(DocumentRecord(STORE, document_id, document_id.title(), uri, "h", "", EVERYONE))


def _answering_world() -> World:
    w = make_world(max_chunks=10)
    _records(w, "manual.pdf", ["vacation days carried over", "vacation requests to the lead"], pages=(4, 9))
    _records(w, "guide/leave.html", ["vacation leave per year", "parental leave"], anchor="sec")
    return w


def test_the_engine_groups_what_it_answers_with_pages_anchors_and_links() -> None:
    w = _answering_world()
    answer = w.engine.ask(Caller("anyone"), VectorQuery(STORE, "vacation days", level=0))
    assert answer.chunks and {c.document_id for c in answer.chunks} == {"manual.pdf", "guide/leave.html"}
    first_seen = list(dict.fromkeys(c.document_id for c in answer.chunks))
    assert [d.document_id for d in answer.documents] == first_seen
    for document in answer.documents:
        assert [c.chunk_id for c in document.chunks] == [
            c.chunk_id for c in answer.chunks if c.document_id == document.document_id
        ]
    by_id = {c.chunk_id: c for c in answer.chunks}
    assert by_id["manual.pdf#1"].pages == (9,) and by_id["guide/leave.html#0"].anchor == "sec-0"
    # The stored store has no base URL, and these are paths of the indexing host: no link for anyone remote.
    assert all(c.link is None for c in answer.chunks) and all(d.link is None for d in answer.documents)
    data = answer.to_dict()
    assert [d["document_id"] for d in data["documents"]] == first_seen
    assert all(c["source_uri"] == "" for d in data["documents"] for c in d["chunks"])


def _context(store: Store) -> QueryContext:
    return QueryContext(store=store, question="vacation days", level=0.0, principals=frozenset({"group:everyone"}))


def _hits(world: World) -> list[SearchHit]:
    vector = world.embedder.embed_documents(["vacation days"])[0]
    return world.index.exact(STORE, vector, 10, {"field": "acl_allow", "operator": "in", "value": ["group:everyone"]})


def test_a_base_url_turns_chunks_into_links_at_their_place() -> None:
    w = _answering_world()
    store = Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 10, source_base_url=BASE + "/")
    answer = Answering(RecordingGenerator()).answer(
        _context(store), Caller("anyone"), "vector", Scope(_hits(w), None, 0.0, False), perform_llm_query=False
    )
    links = {c.chunk_id: c.link for c in answer.chunks}
    assert links == {
        "manual.pdf#0": f"{BASE}/manual.pdf#page=4",
        "manual.pdf#1": f"{BASE}/manual.pdf#page=9",
        "guide/leave.html#0": f"{BASE}/guide/leave.html#sec-0",
        "guide/leave.html#1": f"{BASE}/guide/leave.html#sec-1",
    }
    documents = {d.document_id: d for d in answer.documents}
    assert documents["manual.pdf"].link == f"{BASE}/manual.pdf" and documents["manual.pdf"].pages == (4, 9)
    assert documents["guide/leave.html"].link == f"{BASE}/guide/leave.html"


class _TwoChunkWindow(RecordingGenerator):
    """A model whose window holds two chunks: the answer lists only the chunks it was given."""

    def token_budget(self) -> TokenBudget:
        return TokenBudget(251, 1, lambda text: text.count("vacation") * 100 + text.count("leave") * 100)


def test_groups_hold_only_the_chunks_the_answer_kept() -> None:
    w = _answering_world()
    store = Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 10)
    hits = _hits(w)
    answer = Answering(_TwoChunkWindow()).answer(
        _context(store), Caller("anyone"), "vector", Scope(hits, None, 0.0, False), perform_llm_query=True
    )
    assert 0 < len(answer.chunks) < len(hits)
    assert [c for d in answer.documents for c in d.chunks] == sorted(
        answer.chunks, key=lambda c: [d.document_id for d in answer.documents].index(c.document_id)
    )
    assert {c.chunk_id for d in answer.documents for c in d.chunks} == {c.chunk_id for c in answer.chunks}
