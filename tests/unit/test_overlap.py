"""The lexical search runs beside the question's embedding, and only on a free thread."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from acl.errors import Unavailable
from acl.model import Acl
from indexer.index import Filter, SearchHit
from service.domain.queries import VectorQuery
from service.query.overlap import Overlap
from tests.fakes import FakeIndex
from tests.fakes_service import FakeEmbedder
from tests.unit.engine_world import STORE, World, make_world

pytestmark = pytest.mark.unit

QUESTION = "Which form do contractors sign?"


class Signalling(FakeIndex):
    """The fake index; its lexical search announces itself (and may fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.lexical_started = threading.Event()
        self.lexical_threads: list[int] = []
        self.fail = False

    def lexical(self, store_id: str, text: str, k: int, filter: Filter) -> list[SearchHit]:
        self.lexical_threads.append(threading.get_ident())
        self.lexical_started.set()
        if self.fail:
            raise Unavailable("the full-text index is unavailable")
        return super().lexical(store_id, text, k, filter)


class WaitsForLexical(FakeEmbedder):
    """An encoder that, for a question, waits (up to 5 s) until the lexical search has started."""

    def __init__(self, index: Signalling, dimension: int) -> None:
        super().__init__(dimension=dimension)
        self._index = index
        self.saw_lexical: list[bool] = []

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        self.saw_lexical.append(self._index.lexical_started.wait(timeout=5))
        return super().embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed_documents(texts)


@pytest.fixture
def world() -> World:
    w = make_world(level=0.0, min_threshold=0.0, max_threshold=0.5, index=Signalling())
    w.add("forms.md", ["Contractors sign form C-12 before starting."], Acl.of(["group:everyone"]))
    w.add("secret.md", ["Contractors sign the secret form."], Acl.of(["user:carol"]))
    w.repo.update_store(STORE, fusion="rrf")
    return w


def _waiting_encoder(world: World) -> WaitsForLexical:
    assert isinstance(world.index, Signalling)
    encoder = WaitsForLexical(world.index, world.embedder.dimension)
    world.engine._retrieval._embedder_for = lambda _: encoder
    return encoder


def test_the_lexical_search_runs_while_the_question_is_embedded(world: World) -> None:
    encoder = _waiting_encoder(world)
    answer = world.ask("anyone", VectorQuery(STORE, QUESTION))
    assert encoder.saw_lexical == [True]  # it had started before the vector was there
    assert isinstance(world.index, Signalling)
    assert world.index.lexical_threads != [threading.get_ident()]
    assert {"embed", "search", "lexical", "lexical_wait", "access"} <= set(answer.timings_ms)
    # The overlapped hits go through the same access check: carol's document never reaches anyone else.
    assert [c.document_id for c in answer.chunks] == ["forms.md"]
    assert {c.document_id for c in world.ask("carol", VectorQuery(STORE, QUESTION)).chunks} == {
        "forms.md",
        "secret.md",
    }


def test_with_no_thread_free_the_lexical_search_runs_inline_after_the_dense_one(world: World) -> None:
    world.engine._retrieval._overlap = Overlap(threads=0)
    encoder = _waiting_encoder(world)
    assert isinstance(world.index, Signalling)
    world.index.lexical_started.set()  # the encoder need not wait: nothing runs beside it
    answer = world.ask("anyone", VectorQuery(STORE, QUESTION))
    assert world.index.lexical_threads == [threading.get_ident()]
    assert "lexical_wait" not in answer.timings_ms and "lexical" in answer.timings_ms
    assert [c.document_id for c in answer.chunks] == ["forms.md"]
    assert encoder.saw_lexical == [True]


def test_a_failing_lexical_search_fails_the_query_as_it_did_inline(world: World) -> None:
    assert isinstance(world.index, Signalling)
    world.index.fail = True
    with pytest.raises(Unavailable, match="full-text index"):
        world.ask("anyone", VectorQuery(STORE, QUESTION))


def test_a_dense_only_store_runs_no_lexical_search_at_all(world: World) -> None:
    world.repo.update_store(STORE, fusion="dense")
    answer = world.ask("anyone", VectorQuery(STORE, QUESTION))
    assert isinstance(world.index, Signalling)
    assert world.index.lexical_threads == []
    assert "lexical" not in answer.timings_ms


def test_the_pool_takes_work_only_with_a_thread_free() -> None:
    overlap = Overlap(threads=1)
    gate = threading.Event()
    busy = overlap.start(gate.wait, 5)
    assert busy is not None
    assert overlap.start(lambda: 1) is None  # no queueing behind the busy thread
    gate.set()
    assert busy.result(timeout=5)[0] is True
    again = overlap.start(lambda x: x * 2, 21)
    assert again is not None
    value, took_ms = again.result(timeout=5)
    assert value == 42 and took_ms >= 0


def test_work_the_pool_could_not_start_a_thread_for_runs_once_by_its_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """``submit`` queues the work before starting a thread; when that start fails the caller is told to run the
    work itself, and the queued copy must not run on the pool later (nor give its slot back twice)."""
    overlap = Overlap(threads=2)
    gate = threading.Event()
    runs: list[str] = []
    first = overlap.start(lambda: (gate.wait(5), runs.append("first")))
    assert first is not None
    start = threading.Thread.start

    def failing_start(thread: threading.Thread) -> None:
        if thread.name.startswith("docqa-overlap"):
            raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", failing_start)
    assert overlap.start(lambda: runs.append("second")) is None  # the caller runs it inline
    monkeypatch.setattr(threading.Thread, "start", start)
    gate.set()
    first.result(timeout=5)
    again = overlap.start(lambda: runs.append("third"))
    assert again is not None
    again.result(timeout=5)
    assert runs == ["first", "third"]
    both = [overlap.start(gate.wait, 5), overlap.start(gate.wait, 5)]
    assert all(f is not None for f in both) and overlap.start(lambda: 0) is None  # still exactly two slots
