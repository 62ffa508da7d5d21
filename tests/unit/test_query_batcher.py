"""The question micro-batcher: concurrent questions share encoder calls, each caller gets its own vector."""

from __future__ import annotations

import threading
from collections.abc import Sequence

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


def _ask_all(batcher: BatchingEmbedder, questions: list[str]) -> dict[str, object]:
    results: dict[str, object] = {}

    def ask(question: str) -> None:
        try:
            results[question] = batcher.embed_query(question)
        except Exception as exc:
            results[question] = exc

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
    for thread in threads:
        thread.start()
    results["_threads"] = threads
    return results


def _join(results: dict[str, object]) -> dict[str, object]:
    for thread in results.pop("_threads"):  # type: ignore[attr-defined]
        thread.join(timeout=10)
    return results


def test_concurrent_questions_share_few_encoder_calls_and_each_caller_gets_its_own_vector() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=64, max_wait_s=0.0)
    first = _ask_all(batcher, ["warm-up question"])
    assert inner.entered.wait(timeout=10)  # the encoder is busy with the first question ...
    questions = [f"question number {i} about topic{i}" for i in range(40)]
    rest = _ask_all(batcher, questions)  # ... while 40 more arrive
    while batcher._queue.qsize() < len(questions):
        threading.Event().wait(0.001)
    inner.gate.set()
    results = _join(first) | _join(rest)
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
    first = _ask_all(batcher, ["first"])
    assert inner.entered.wait(timeout=10)
    rest = _ask_all(batcher, [f"q{i}" for i in range(20)])
    while batcher._queue.qsize() < 20:
        threading.Event().wait(0.001)
    inner.gate.set()
    _join(first)
    _join(rest)
    batcher.close()
    assert inner.sizes == [1, 8, 8, 4]


def test_a_lone_question_is_embedded_after_the_short_wait() -> None:
    inner = FakeEmbedder()
    batcher = BatchingEmbedder(inner, max_wait_s=0.001)
    vector = batcher.embed_query("vacation days")
    batcher.close()
    np.testing.assert_array_equal(vector, FakeEmbedder().embed_query("vacation days"))
    assert inner.calls == 1


def test_a_full_queue_refuses_with_resource_exhausted_after_a_brief_wait() -> None:
    inner = SlowEmbedder()
    batcher = BatchingEmbedder(inner, max_batch=1, max_wait_s=0.0, max_queue=2, queue_timeout_s=0.01)
    first = _ask_all(batcher, ["busy"])
    assert inner.entered.wait(timeout=10)
    queued = _ask_all(batcher, ["a", "b"])  # fills the queue of two
    while batcher._queue.qsize() < 2:
        threading.Event().wait(0.001)
    with pytest.raises(ResourceExhausted, match="too many questions"):
        batcher.embed_query("one too many")
    inner.gate.set()
    results = _join(first) | _join(queued)
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
