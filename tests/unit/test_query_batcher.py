"""The question micro-batcher: concurrent questions share encoder calls, each caller gets its own vector."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from acl.errors import ResourceExhausted, Unavailable
from indexer.query_batcher import BatchingEmbedder
from tests.fakes_service import FakeEmbedder

pytestmark = pytest.mark.unit


class SlowEmbedder(FakeEmbedder):
    """A fake encoder that holds each call until the test lets it go, counting calls and batch sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.sizes: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.entered.set()
        self.gate.wait(timeout=10)
        self.sizes.append(len(texts))
        return super().embed_documents(texts)


class FailingEmbedder(FakeEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise Unavailable("the encoder is down")


class Callers:
    """Threads that each ask one question of a batcher; ``results()`` waits for all and maps question → outcome."""

    def __init__(self, batcher: BatchingEmbedder, questions: list[str]) -> None:
        self._outcomes: dict[str, object] = {}
        self._threads = [threading.Thread(target=self._ask, args=(batcher, q)) for q in questions]
        for thread in self._threads:
            thread.start()

    def _ask(self, batcher: BatchingEmbedder, question: str) -> None:
        try:
            self._outcomes[question] = batcher.embed_query(question)
        except Exception as exc:
            self._outcomes[question] = exc

    def results(self) -> dict[str, object]:
        for thread in self._threads:
            thread.join(timeout=10)
        return self._outcomes


def _until_queued(batcher: BatchingEmbedder, count: int) -> None:
    while batcher.waiting() < count:
        threading.Event().wait(0.001)


def _queued_behind_a_busy_encoder(
    batcher: BatchingEmbedder, inner: SlowEmbedder, first: str, questions: list[str]
) -> tuple[Callers, Callers]:
    """``first`` held in the encoder (until ``inner.gate`` is set), and ``questions`` queued behind it."""
    held = Callers(batcher, [first])
    assert inner.entered.wait(timeout=10)
    queued = Callers(batcher, questions)
    _until_queued(batcher, len(questions))
    return held, queued


def test_concurrent_questions_share_few_encoder_calls_and_each_caller_gets_its_own_vector() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=64, max_wait_s=0.0)
    first = Callers(batcher, ["warm-up question"])
    assert inner.entered.wait(timeout=10)  # the encoder is busy with the first question ...
    questions = [f"question number {i} about topic{i}" for i in range(40)]
    rest = Callers(batcher, questions)  # ... while 40 more arrive
    _until_queued(batcher, len(questions))
    inner.gate.set()
    results = first.results() | rest.results()
    batcher.close()

    assert inner.calls == 2  # 41 questions, two encoder calls: the first alone, then the 40 queued together
    assert inner.sizes == [1, 40]
    reference = FakeEmbedder()
    for question in [*questions, "warm-up question"]:
        np.testing.assert_array_equal(results[question], reference.embed_query(question))
    assert (batcher.batches, batcher.questions) == (2, 41)


def test_a_batch_holds_at_most_max_batch_questions() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=8, max_wait_s=0.0)
    first, rest = _queued_behind_a_busy_encoder(batcher, inner, "first", [f"q{i}" for i in range(20)])
    inner.gate.set()
    first.results()
    rest.results()
    batcher.close()
    assert inner.sizes == [1, 8, 8, 4]


def test_a_lone_question_is_embedded_after_the_short_wait() -> None:
    inner = FakeEmbedder()
    batcher = BatchingEmbedder(inner, max_wait_s=0.001)
    vector = batcher.embed_query("vacation days")
    batcher.close()
    np.testing.assert_array_equal(vector, FakeEmbedder().embed_query("vacation days"))
    assert inner.calls == 1


def test_questions_a_gathering_leader_will_take_do_not_count_against_the_queue() -> None:
    """With a wait for company, the batch being gathered is not queued: a queue of one refuses nobody while the
    encoder is idle."""
    inner = FakeEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=6, max_wait_s=10.0, max_queue=1, queue_timeout_s=0.01)
    callers = Callers(batcher, [f"q{i}" for i in range(6)])  # the batch is full at six: no 10 s wait
    results = callers.results()
    batcher.close()
    assert all(isinstance(v, np.ndarray) for v in results.values()) and len(results) == 6
    assert inner.calls == 1


def test_a_full_queue_refuses_with_resource_exhausted_after_a_brief_wait() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=1, max_wait_s=0.0, max_queue=2, queue_timeout_s=0.01)
    first = Callers(batcher, ["busy"])
    assert inner.entered.wait(timeout=10)
    queued = Callers(batcher, ["a", "b"])  # fills the queue of two
    _until_queued(batcher, 2)
    with pytest.raises(ResourceExhausted, match="too many questions"):
        batcher.embed_query("one too many")
    inner.gate.set()
    results = first.results() | queued.results()
    batcher.close()
    assert all(isinstance(v, np.ndarray) for v in results.values())  # the queued ones were still answered


def test_an_encoder_failure_reaches_every_caller_of_the_batch() -> None:
    batcher = BatchingEmbedder(FailingEmbedder(), max_wait_s=0.0)
    with pytest.raises(Unavailable, match="encoder is down"):
        batcher.embed_query("anything")
    batcher.close()


def test_documents_pass_straight_through_and_a_closed_batcher_refuses_questions() -> None:
    inner = FakeEmbedder()
    batcher = BatchingEmbedder(inner)
    assert batcher.embed_documents(["a", "b"]).shape == (2, inner.dimension)
    assert (batcher.dimension, batcher.model_name, batcher.max_tokens) == (64, "fake", 64)
    batcher.close()
    with pytest.raises(Unavailable, match="closed"):
        batcher.embed_query("late")


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_batch"):
        BatchingEmbedder(FakeEmbedder(), max_batch=0)


def test_a_server_app_batches_questions_unless_configured_off(tmp_path: Path) -> None:
    from service.bootstrap import build_app
    from service.config import Settings

    app = build_app(Settings(data_dir=tmp_path), embedder_factory=lambda _: FakeEmbedder())
    assert not isinstance(app.embedder(), BatchingEmbedder)  # the CLI's one question needs no batcher
    served = build_app(Settings(data_dir=tmp_path / "on"), embedder_factory=lambda _: FakeEmbedder())
    served.batch_questions()
    embedder = served.embedder()
    assert isinstance(embedder, BatchingEmbedder)
    np.testing.assert_array_equal(embedder.embed_query("parking"), FakeEmbedder().embed_query("parking"))
    served.close()
    with pytest.raises(Unavailable, match="closed"):
        embedder.embed_query("after close")
    off = build_app(
        Settings(data_dir=tmp_path / "off", query_batching={"enabled": False}),
        embedder_factory=lambda _: FakeEmbedder(),
    )
    off.batch_questions()
    assert not isinstance(off.embedder(), BatchingEmbedder)
    for each in (app, off):
        each.close()


class ThreadRecordingEmbedder(FakeEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.threads.append(threading.get_ident())
        return super().embed_documents(texts)


def test_a_lone_question_is_embedded_on_its_callers_own_thread() -> None:
    inner = ThreadRecordingEmbedder()
    batcher = BatchingEmbedder(inner, max_wait_s=0.0)
    before = threading.active_count()
    batcher.embed_query("vacation days")
    batcher.embed_query("parking")
    assert inner.threads == [threading.get_ident()] * 2  # no hand-over to a worker thread
    assert threading.active_count() == before
    batcher.close()


class FailOnceEmbedder(SlowEmbedder):
    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = super().embed_documents(texts)
        if len(self.sizes) == 1:
            raise Unavailable("the encoder hiccupped")
        return vectors


def test_after_a_failed_batch_the_questions_queued_behind_it_are_still_answered() -> None:
    inner = FailOnceEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=4, max_wait_s=0.0)
    first, rest = _queued_behind_a_busy_encoder(batcher, inner, "fails", [f"q{i}" for i in range(6)])
    inner.gate.set()
    failed, answered = first.results(), rest.results()
    assert isinstance(failed["fails"], Unavailable)
    assert all(isinstance(v, np.ndarray) for v in answered.values()) and len(answered) == 6
    assert inner.sizes == [1, 4, 2]
    batcher.close()


def test_close_waits_for_the_questions_already_queued() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=2, max_wait_s=0.0)
    first, queued = _queued_behind_a_busy_encoder(batcher, inner, "busy", ["a", "b", "c"])
    closing = threading.Thread(target=batcher.close)
    closing.start()
    closing.join(timeout=0.05)
    assert closing.is_alive()  # the encoder is still busy with queued questions
    with pytest.raises(Unavailable, match="closed"):
        batcher.embed_query("late")
    inner.gate.set()
    closing.join(timeout=10)
    results = first.results() | queued.results()
    assert all(isinstance(v, np.ndarray) for v in results.values()) and len(results) == 4
    assert inner.sizes == [1, 2, 1]
