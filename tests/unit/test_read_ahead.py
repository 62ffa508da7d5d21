"""The read-ahead iterator: order, bound, errors where iteration would raise them, and a thread that always ends."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from indexer.ingest.read_ahead import read_ahead


def read_ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "docqa-read-ahead"]


@pytest.mark.parametrize("limit", [0, 1, 3, 100])
def test_items_arrive_in_order(limit: int) -> None:
    with read_ahead(iter(range(50)), limit=limit, weight=lambda _: 1) as items:
        assert list(items) == list(range(50))
    assert read_ahead_threads() == []


def test_limit_zero_iterates_in_the_callers_thread() -> None:
    seen: list[str] = []

    def source() -> Iterator[int]:
        seen.append(threading.current_thread().name)
        yield 1

    with read_ahead(source(), limit=0, weight=lambda _: 1) as items:
        assert list(items) == [1]
    assert seen == [threading.current_thread().name]


def test_the_producer_stays_within_the_limit_by_weight() -> None:
    limit = 6
    consumed = 0
    ahead: list[int] = []  # the weight produced and not yet consumed, as each item is produced
    reached = threading.Event()

    def source() -> Iterator[int]:
        produced = 0
        for _ in range(40):
            ahead.append(produced - consumed)
            produced += 2
            if produced - consumed >= limit:
                reached.set()
            yield 2

    with read_ahead(source(), limit=limit, weight=lambda item: item) as items:
        next(items)
        consumed += 2
        assert reached.wait(timeout=30)  # it ran ahead as far as the limit lets it, then waited
        for item in items:
            consumed += item
    assert consumed == 80
    # What waits is at most the limit; one more item may be in the producer's hands.
    assert max(ahead) <= limit + 2


def test_an_item_heavier_than_the_limit_still_passes() -> None:
    with read_ahead(iter([10, 1, 10]), limit=2, weight=lambda item: item) as items:
        assert list(items) == [10, 1, 10]


def test_an_error_of_the_source_comes_after_the_items_before_it_and_ends_the_thread() -> None:
    def source() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("parser bug")

    got: list[int] = []
    with pytest.raises(ValueError, match="parser bug"), read_ahead(source(), limit=4, weight=lambda _: 1) as items:
        got.extend(items)
    assert got == [1, 2]
    assert read_ahead_threads() == []


def test_leaving_early_stops_the_producer_and_waits_for_it() -> None:
    def endless() -> Iterator[int]:
        n = 0
        while True:
            yield n
            n += 1

    for error in (RuntimeError("encoder died"), KeyboardInterrupt()):
        with pytest.raises(type(error)), read_ahead(endless(), limit=3, weight=lambda _: 1) as items:
            assert next(items) == 0
            raise error
        assert read_ahead_threads() == []
