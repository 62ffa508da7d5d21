"""The embedded index's readers-writer lock lets neither side starve the other."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.rwlock import RWLock
from indexer.index.port import StoreSpec
from tests.contract.index_contract import DIM, STORE, random_vectors
from tests.unit.test_embedded_live import EVERYONE, ROWS, corpus


def until(condition: Callable[[], bool]) -> None:
    """Wait (on the threads under test, not on the clock) until ``condition`` holds."""
    for _ in range(30_000):
        if condition():
            return
        threading.Event().wait(0.001)
    raise AssertionError("the threads never got there")


def test_readers_waiting_when_a_writer_leaves_go_before_the_next_writer() -> None:
    lock = RWLock()
    order: list[str] = []

    def query() -> None:
        with lock.read():
            order.append("query")

    def extender() -> None:  # the graph extended slice by slice, the lock taken again at once
        for _ in range(3):
            with lock.write():
                order.append("slice")

    with lock.write():
        reader = threading.Thread(target=query)
        reader.start()
        until(lambda: lock.readers_waiting == 1)
        writer = threading.Thread(target=extender)
        writer.start()
        until(lambda: lock.writers_waiting == 1)
    reader.join()
    writer.join()
    assert order == ["query", "slice", "slice", "slice"]


def test_a_waiting_writer_goes_before_readers_that_come_after_it() -> None:
    lock = RWLock()
    order: list[str] = []

    def write() -> None:
        with lock.write():
            order.append("writer")

    def read() -> None:
        with lock.read():
            order.append("late reader")

    with lock.read():
        writer = threading.Thread(target=write)
        writer.start()
        until(lambda: lock.writers_waiting == 1)
        late = threading.Thread(target=read)
        late.start()
        until(lambda: lock.readers_waiting == 1)
    writer.join()
    late.join()
    assert order == ["writer", "late reader"]


def test_readers_share_the_lock() -> None:
    lock = RWLock()
    both_in = threading.Barrier(2, timeout=30)  # broken (an error) unless both hold the read side at once

    def read() -> None:
        with lock.read():
            both_in.wait()

    threads = [threading.Thread(target=read) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not both_in.broken


def test_queries_are_answered_while_the_graph_takes_new_rows(tmp_path: Path) -> None:
    index = EmbeddedIndex(tmp_path, background=True)
    try:
        index.ensure(StoreSpec(STORE, DIM))
        index.upsert(STORE, corpus(ROWS))
        index.prepare(STORE)
        late = 40_000
        index.upsert(STORE, corpus(late, seed=8, prefix="late"))
        extender = threading.Thread(target=index.prepare, args=(STORE,))  # as the background keeper does
        extender.start()
        until(lambda: index.stats(STORE).graph_rows > ROWS)
        answered = [len(index.knn(STORE, query, 10, EVERYONE)) for query in random_vectors(3, seed=9)]
        during = index.stats(STORE).graph_rows
        extender.join()
        assert answered == [10, 10, 10]
        assert during < ROWS + late  # answered between slices, not after the whole extension
        assert index.stats(STORE).graph_rows == ROWS + late
    finally:
        index.close()
