from __future__ import annotations

import math

import numpy as np
import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.index import ChunkRecord
from service.domain.queries import (
    NO_RELEVANT_DOCUMENT,
    Caller,
    DocumentQuery,
    MultiDocumentQuery,
    VectorQuery,
)
from tests.unit.engine_world import STORE, World, make_world

FINANCE = Acl.of(["group:finance"], ["user:mallory"])
EVERYONE = Acl.of(["group:everyone"])


@pytest.fixture
def world() -> World:
    w = make_world()
    w.access.add_member("group:finance", "user:alice", "test")
    w.access.add_member("group:finance", "user:mallory", "test")
    w.access.add_member("group:finance", "group:auditors", "test")
    w.access.add_member("group:auditors", "user:carol", "test")
    w.add(
        "q3.md",
        ["Revenue in the third quarter was 48 million euros.", "Operating costs rose because of the new data centre."],
        FINANCE,
    )
    w.add(
        "vacation.md",
        [
            "Employees receive 25 days of paid vacation per year.",
            "Unused vacation days may be carried over until March.",
        ],
        EVERYONE,
    )
    return w


def docs(answer) -> set[str]:  # type: ignore[no-untyped-def]
    return {c.document_id for c in answer.chunks}


def test_reader_gets_answer_with_scored_sources(world: World) -> None:
    answer = world.ask("alice", VectorQuery(STORE, "What was revenue in the third quarter?"))
    assert answer.chunks[0].document_id == "q3.md"
    assert answer.answer is not None and "[1]" in answer.answer
    assert answer.threshold == pytest.approx(0.1 + 0.5 * 0.5)
    assert all(0 <= c.relevance <= 1 for c in answer.chunks)  # type: ignore[operator]
    assert [c.score for c in answer.chunks] == sorted((c.score for c in answer.chunks), reverse=True)


def test_nested_group_member_reads_and_deny_wins(world: World) -> None:
    assert "q3.md" in docs(world.ask("carol", VectorQuery(STORE, "revenue third quarter", level=0)))
    assert "q3.md" not in docs(world.ask("mallory", VectorQuery(STORE, "revenue third quarter", level=0)))
    assert "q3.md" not in docs(world.ask("bob", VectorQuery(STORE, "revenue third quarter", level=0)))


def test_nothing_relevant_is_the_exact_sentence_and_no_llm(world: World) -> None:
    answer = world.ask("bob", VectorQuery(STORE, "What was revenue in the third quarter?"))
    assert answer.answer == NO_RELEVANT_DOCUMENT
    assert answer.no_relevant_document and answer.chunks == ()
    assert world.generator.prompts == []
    assert not answer.retry_without_threshold_allowed  # the whole store was in scope


def test_one_document_in_scope_allows_retry_without_threshold(world: World) -> None:
    answer = world.ask("alice", MultiDocumentQuery(STORE, "photosynthesis in plants", ("vacation.md",)))
    assert answer.answer == NO_RELEVANT_DOCUMENT and answer.retry_without_threshold_allowed
    retry = world.ask("alice", MultiDocumentQuery(STORE, "photosynthesis in plants", ("vacation.md",), level=0.0))
    assert retry.threshold is None and docs(retry) == {"vacation.md"}


def test_level_null_uses_store_level_and_store_level_changes_apply(world: World) -> None:
    world.repo.update_store(STORE, level=0.2)
    answer = world.ask("alice", VectorQuery(STORE, "vacation days"))
    assert answer.level == 0.2 and answer.threshold == pytest.approx(0.1 + 0.2 * 0.5)


@pytest.mark.parametrize("level", [-0.1, 1.5, math.nan, "high", True])
def test_bad_level_runs_nothing(world: World, level: object) -> None:
    before = world.embedder.calls
    with pytest.raises(InvalidArgument):
        world.ask("alice", VectorQuery(STORE, "revenue", level=level))  # type: ignore[arg-type]
    assert world.embedder.calls == before and world.generator.prompts == []


@pytest.mark.parametrize("question", ["", "   ", "x" * 4001])
def test_bad_question_is_refused(world: World, question: str) -> None:
    with pytest.raises(InvalidArgument, match="question"):
        world.ask("alice", VectorQuery(STORE, question))


def test_unknown_store(world: World) -> None:
    with pytest.raises(NotFound, match="store 'nope' not found"):
        world.ask("alice", VectorQuery("nope", "revenue"))
    with pytest.raises(NotFound, match="not found"):  # a lone surrogate (the CLI's non-UTF-8 byte) names no store
        world.ask("alice", VectorQuery("acme\udcff", "revenue"))


def test_unreadable_document_is_indistinguishable_from_missing(world: World) -> None:
    with pytest.raises(NotFound) as hidden:
        world.ask("bob", DocumentQuery(STORE, "revenue", "q3.md"))
    with pytest.raises(NotFound) as missing:
        world.ask("bob", DocumentQuery(STORE, "revenue", "q4.md"))
    assert str(hidden.value).replace("q3.md", "X") == str(missing.value).replace("q4.md", "X")
    with pytest.raises(NotFound):
        world.ask("bob", MultiDocumentQuery(STORE, "revenue", ("vacation.md", "q3.md")))


def test_revocation_in_the_authoritative_acl_hides_at_once(world: World) -> None:
    assert "q3.md" in docs(world.ask("alice", VectorQuery(STORE, "revenue third quarter", level=0)))
    world.access.override_acl(STORE, "q3.md", Acl.of(["user:carol"]), "test")  # index copy left stale on purpose
    answer = world.ask("alice", VectorQuery(STORE, "revenue third quarter", level=0))
    assert "q3.md" not in docs(answer)
    assert all("48 million" not in p.render() for p in world.generator.prompts[-1:])


def test_group_removal_hides_at_once(world: World) -> None:
    world.access.remove_member("group:auditors", "user:carol", "test")
    assert "q3.md" not in docs(world.ask("carol", VectorQuery(STORE, "revenue third quarter", level=0)))


def test_document_query_sends_whole_text_without_threshold(world: World) -> None:
    answer = world.ask("alice", DocumentQuery(STORE, "photosynthesis", "vacation.md"))
    assert answer.threshold is None and len(answer.chunks) == 1
    assert answer.chunks[0].text == "\n\n".join(world.docs["vacation.md"])
    assert world.generator.prompts[-1].chunks[0].text == answer.chunks[0].text


def test_document_query_falls_back_to_chunks_when_too_long() -> None:
    w = make_world(context_tokens=600)
    long_paragraphs = [f"Paragraph {i} about vacation planning and rest days. " * 6 for i in range(40)]
    w.add("long.md", long_paragraphs, EVERYONE)
    answer = w.ask("bob", DocumentQuery(STORE, "vacation planning", "long.md"))
    assert answer.threshold is not None
    assert 1 <= len(answer.chunks) <= 4 and all(c.chunk_id != "long.md#all" for c in answer.chunks)


def test_multi_document_whole_documents(world: World) -> None:
    answer = world.ask("alice", MultiDocumentQuery(STORE, "vacation", ("vacation.md", "q3.md"), level=0, max_chunks=-1))
    assert {c.chunk_id for c in answer.chunks} == {"vacation.md#all", "q3.md#all"}


def test_whole_documents_are_bounded_by_the_context_budget() -> None:
    w = make_world(context_tokens=600)
    paragraphs = [f"Paragraph {i} about vacation planning and rest days. " * 6 for i in range(40)]
    for name in ("a.md", "b.md"):
        w.add(name, paragraphs, EVERYONE)
    for llm in (True, False):
        with pytest.raises(InvalidArgument, match="exceed the language model's context budget"):
            w.ask("bob", MultiDocumentQuery(STORE, "vacation", ("a.md", "b.md"), 0, -1, llm))
    w.add("short.md", ["Rest days are Sundays."], EVERYONE)
    answer = w.ask("bob", MultiDocumentQuery(STORE, "rest days", ("short.md",), level=0, max_chunks=-1))
    assert [c.chunk_id for c in answer.chunks] == ["short.md#all"]


def test_no_llm_returns_chunks_only(world: World) -> None:
    answer = world.ask("alice", VectorQuery(STORE, "revenue third quarter", perform_llm_query=False))
    assert answer.answer is None and answer.chunks and world.generator.prompts == []


def test_max_chunks_bounds(world: World) -> None:
    for bad in (0, -1, 101):
        with pytest.raises(InvalidArgument):
            world.ask("alice", VectorQuery(STORE, "revenue", max_chunks=bad))


def test_narrow_access_still_fills_k() -> None:
    """0.5 % of 20,000 chunks readable: the search still returns k of them."""
    w = make_world(max_chunks=10, dimension=16)
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(20_000, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    readable = set(rng.choice(20_000, size=100, replace=False).tolist())
    from indexer.documents import DocumentRecord

    records = []
    for i in range(20_000):
        acl = Acl.of(["user:few"]) if i in readable else Acl.of(["group:others"])
        records.append(ChunkRecord(f"d{i}#0", f"d{i}", 0, f"text {i}", f"d{i}", "", (), 0, 6, acl, vector=vectors[i]))
        if i in readable:  # the others are never returned by the filtered search
            w.repo.save_document(DocumentRecord(STORE, f"d{i}", f"d{i}", "", "h", f"text {i}", acl))
    w.index.upsert(STORE, records)
    query = vectors[0]

    class Fixed(type(w.embedder)):  # type: ignore[misc]
        def embed_query(self, text: str):  # type: ignore[no-untyped-def]
            return query

    fixed = Fixed(dimension=16)
    engine = type(w.engine)(repository=w.repo, index=w.index, embedder_for=lambda _: fixed, generator=w.generator)
    answer = engine.ask(Caller("few"), VectorQuery(STORE, "anything", level=0, max_chunks=10))
    assert len(answer.chunks) == 10
    assert {int(c.document_id[1:]) for c in answer.chunks} <= readable


def test_streaming_hands_each_piece_over_before_the_answer(world: World) -> None:
    from collections.abc import Iterator

    from service.generation.prompt import Prompt

    class Streaming(type(world.generator)):  # type: ignore[misc]
        def stream(self, prompt: Prompt) -> Iterator[str]:
            self.prompts.append(prompt)
            yield from ("Revenue ", "was ", "48 million [1]")

    generator = Streaming()
    engine = type(world.engine)(
        repository=world.repo, index=world.index, embedder_for=lambda _: world.embedder, generator=generator
    )
    pieces: list[str] = []
    answer = engine.ask(Caller("alice"), VectorQuery(STORE, "revenue third quarter"), on_text=pieces.append)
    # Pieces come out as they arrive, less an unfinished last word (it might be the start of a link).
    assert pieces[:2] == ["Revenue ", "was "] and "".join(pieces) == "Revenue was 48 million [1]"
    assert answer.answer == "Revenue was 48 million [1]"
    assert all(c.document_id in {"q3.md", "vacation.md"} for p in generator.prompts for c in p.chunks)


def test_whole_documents_past_any_context_are_refused_before_the_rest_are_read() -> None:
    w = make_world(context_tokens=600)
    paragraphs = [f"Paragraph {i} about vacation planning and rest days. " * 6 for i in range(40)]
    names = tuple(f"d{i}.md" for i in range(12))
    for name in names:
        w.add(name, paragraphs, EVERYONE)  # each about 13,000 characters: the first alone is past 8 x 472 tokens
    retrieval = w.engine._retrieval  # counting the whole texts the query reads
    read: list[str] = []
    whole = retrieval.whole_document

    def counted(ctx: object, document_id: str, score: float) -> object:
        read.append(document_id)
        return whole(ctx, document_id, score)  # type: ignore[arg-type]

    retrieval.whole_document = counted  # type: ignore[method-assign]
    with pytest.raises(InvalidArgument, match=r"these 12 documents exceed the language model's context budget"):
        w.ask("bob", MultiDocumentQuery(STORE, "vacation", names, 0, -1))
    assert len(read) == 1  # not twelve whole texts held at once to find out
