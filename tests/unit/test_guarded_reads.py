"""One guarded path to indexed content: ``service.query.guarded`` is the only reader of the index port.

Three kinds of proof: the code is walked (no module under ``service/`` but the guarded one names an index read
method), every query class is run over an index that records who calls it, and the guarded reader is shown
to put the caller's ACL inside every search and to drop, after it, what the authoritative source refuses.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from acl.checker import AccessChecker
from acl.errors import NotFound
from acl.model import Acl
from indexer.index import Filter, SearchHit
from indexer.index.port import Vector
from service.domain.analysis import ComparisonRequest, SummaryRequest
from service.domain.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery
from service.query.calibration import Calibrator
from service.query.engine import QueryEngine
from service.query.guarded import READ_METHODS, CallerIndex, StoreWideReads, Within
from tests.fakes import FakeIndex
from tests.unit.engine_world import STORE, World, make_world

ROOT = Path(__file__).resolve().parents[2]
GUARDED = "service/query/guarded.py"
EVERYONE = Acl.of(["group:everyone"])
FINANCE = Acl.of(["group:finance"])


def direct_reads(source: str) -> list[str]:
    """Where ``source`` reaches an index read method: ``x.knn`` (called or passed on), ``<...index...>.count``
    (``count`` is also a str/list method: only a receiver that names an index counts) and ``getattr(x, "knn")``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in READ_METHODS:
            if node.attr != "count" or "index" in ast.unparse(node.value).lower():
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            named = [a.value for a in node.args[1:2] if isinstance(a, ast.Constant)]
            if named and named[0] in READ_METHODS:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_service_module_but_the_guarded_one_reads_the_index() -> None:
    offenders = {
        path.relative_to(ROOT).as_posix(): hits
        for path in sorted((ROOT / "service").rglob("*.py"))
        if "_gen" not in path.parts and path.relative_to(ROOT).as_posix() != GUARDED
        if (hits := direct_reads(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_the_walk_finds_a_new_direct_read() -> None:
    planted = """
def vector_scope(retrieval, ctx, v, allowed):
    hits = retrieval.index.knn(ctx.store.id, v, 10, allowed)
    pool.start(self._index.lexical, ctx.store.id, "q", 10, allowed)
    read = getattr(index, "document_chunks")
    n = app.index.count(ctx.store.id)
    return host.count(".") + text.count("(")
"""
    assert sorted(int(line.split(":")[0]) for line in direct_reads(planted)) == [3, 4, 5, 6]
    assert direct_reads(Path(ROOT / GUARDED).read_text(encoding="utf-8"))  # the walk does see real reads


class TripwireIndex(FakeIndex):
    """The fake index, recording the module that entered each read (not reads the index makes of itself)."""

    def __init__(self) -> None:
        super().__init__()
        self.callers: list[tuple[str, str]] = []
        self._depth = 0

    def _entered(self, name: str, read: Callable[..., Any], *args: Any) -> Any:
        if self._depth == 0:
            frame = inspect.stack()[2].frame
            self.callers.append((name, str(frame.f_globals.get("__name__"))))
        self._depth += 1
        try:
            return read(*args)
        finally:
            self._depth -= 1

    def knn(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        return self._entered("knn", super().knn, store_id, vector, k, filter)  # type: ignore[no-any-return]

    def exact(self, store_id: str, vector: Vector, k: int, filter: Filter) -> list[SearchHit]:
        return self._entered("exact", super().exact, store_id, vector, k, filter)  # type: ignore[no-any-return]

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        return self._entered("lexical", super().lexical, store_id, text, k, filter)  # type: ignore[no-any-return]

    def best_per_document(self, store_id: str, vector: Vector, documents: int, filter: Filter) -> list[SearchHit]:
        read = super().best_per_document
        return self._entered("best_per_document", read, store_id, vector, documents, filter)  # type: ignore[no-any-return]

    def document_chunks(self, store_id: str, document_id: str, filter: Filter) -> Any:
        return self._entered("document_chunks", super().document_chunks, store_id, document_id, filter)

    def count(self, store_id: str, filter: Filter | None = None) -> int:
        return self._entered("count", super().count, store_id, filter)  # type: ignore[no-any-return]


def _handbook(world: World) -> None:
    world.add("vacation.md", ["Vacation days carry over into the next year.", "Ask your manager first."], EVERYONE)
    world.add("travel.md", ["Travel meals are reimbursed with receipts.", "Book trains early."], EVERYONE)
    world.add("budget.md", ["The budget for travel grows next year.", "Finance approves it."], FINANCE)


def test_every_query_class_analysis_and_calibration_reads_through_the_guarded_module() -> None:
    index = TripwireIndex()
    world = make_world(index=index, level=0.0)
    _handbook(world)
    alice = Caller("alice", ("group:finance",))
    for fusion in ("rrf", "dense", "lexical"):
        world.repo.update_store(STORE, fusion=fusion)
        world.engine.ask(alice, VectorQuery(STORE, "travel next year", perform_llm_query=False))
        world.engine.ask(alice, MultiDocumentQuery(STORE, "travel", ("travel.md", "budget.md"), max_chunks=2))
    world.engine.ask(alice, MultiDocumentQuery(STORE, "travel", ("travel.md", "budget.md"), max_chunks=-1))
    world.engine.ask(alice, DocumentQuery(STORE, "travel", "budget.md"))
    world.engine.summarize(alice, SummaryRequest(STORE, "vacation.md"))
    world.engine.compare(alice, ComparisonRequest(STORE, ("vacation.md", "travel.md"), "what differs?"))
    Calibrator(stores=world.repo, catalog=world.repo, index=index, embedder_for=lambda _: world.embedder).run(STORE)
    assert {name for name, _ in index.callers} == READ_METHODS
    assert {module for _, module in index.callers} == {"service.query.guarded"}


class CountingSource:
    """The settings database as the permission source, counting the statements asked of it."""

    def __init__(self, world: World) -> None:
        self._repo = world.repo
        self.asked: list[frozenset[str]] = []

    def acls(self, store_id: str, document_ids: Iterable[str]) -> Mapping[str, Acl]:
        wanted = frozenset(document_ids)
        self.asked.append(wanted)
        return self._repo.acls(store_id, wanted)


def _counted(world: World) -> tuple[QueryEngine, CountingSource]:
    source = CountingSource(world)
    engine = QueryEngine(
        repository=world.repo,
        index=world.index,
        embedder_for=lambda _: world.embedder,
        generator=world.generator,
        checker=AccessChecker(source),
    )
    return engine, source


def test_a_comparison_asks_the_permission_source_once_however_many_documents() -> None:
    world = make_world()
    _handbook(world)
    engine, source = _counted(world)
    every = ("vacation.md", "travel.md", "budget.md")
    engine.compare(Caller("alice", ("group:finance",)), ComparisonRequest(STORE, every))
    assert source.asked == [frozenset({"vacation.md", "travel.md", "budget.md"})]


def test_a_summary_checks_before_and_after_reading_with_one_statement() -> None:
    world = make_world()
    _handbook(world)
    engine, source = _counted(world)
    engine.summarize(Caller("alice"), SummaryRequest(STORE, "vacation.md"))
    assert source.asked == [frozenset({"vacation.md"})]


def _reads(world: World, user: str, groups: tuple[str, ...] = ()) -> CallerIndex:
    return CallerIndex(
        index=world.index,
        checker=AccessChecker(world.repo),
        catalog=world.repo,
        store_id=STORE,
        principals=Caller(user, groups).principals(world.repo, STORE),
    )


@pytest.fixture
def stale() -> World:
    """``budget.md``'s index copy still lets everyone read it; the database (authoritative) says finance only."""
    world = make_world()
    _handbook(world)
    world.add("secret.md", ["The travel budget secret is kept here next year."], FINANCE, index_acl=EVERYONE)
    return world


def test_every_search_drops_what_the_authoritative_source_refuses(stale: World) -> None:
    reads = _reads(stale, "bob")
    vector = stale.embedder.embed_query("travel budget secret next year")
    everything = Within()
    searches = [
        reads.approximate(vector, 50, everything),
        reads.exhaustive(vector, 50, everything),
        reads.keyword("travel budget secret", 50, everything),
        reads.best_of_each(vector, 50, everything),
    ]
    assert all(f.fetched > 0 for f in searches)
    checked = reads.checked(*searches)
    assert checked.dropped  # the index copy let secret.md through; the source did not
    for hits in checked.lists:
        assert hits and {h.chunk.document_id for h in hits} <= {"vacation.md", "travel.md"}


def test_whole_documents_of_a_refused_document_are_not_found_like_absent_ones(stale: World) -> None:
    reads = _reads(stale, "bob")
    for read in (lambda d: reads.chunks_of(d), lambda d: reads.whole_document(d, 0.0)):
        with pytest.raises(NotFound) as refused:
            read("secret.md")
        with pytest.raises(NotFound) as absent:
            read("nowhere.md")
        assert str(refused.value).replace("secret.md", "X") == str(absent.value).replace("nowhere.md", "X")
    assert [c.document_id for c in _reads(stale, "carol", ("group:finance",)).chunks_of("secret.md")] == ["secret.md"]


def test_a_scope_never_widens_the_acl() -> None:
    world = make_world()
    _handbook(world)  # budget.md: finance only, in the index copy too
    reads = _reads(world, "bob")
    vector = world.embedder.embed_query("budget")
    scoped = Within(("budget.md",))
    found = [reads.exhaustive(vector, 10, scoped), reads.keyword("budget", 10, scoped)]
    assert [f.fetched for f in found] == [0, 0]  # the ACL is inside the search, not only after it


def test_the_store_wide_reader_of_calibration_sees_every_chunk() -> None:
    world = make_world()
    _handbook(world)
    store_wide = StoreWideReads(world.index, STORE)
    assert store_wide.chunk_count() == 6
    vector = world.embedder.embed_query("budget finance")
    assert "budget.md" in {h.chunk.document_id for h in store_wide.nearest(vector, 6)}
    assert {h.chunk.document_id for h in store_wide.document_hits(vector, 6, "budget.md")} == {"budget.md"}
    assert StoreWideReads(world.index, "never-indexed").chunk_count() == 0
