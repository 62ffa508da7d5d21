"""The embedded index beyond the contract: persistence, crash safety, the HNSW graph's life."""

from __future__ import annotations

import dataclasses
import math
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from acl.errors import InvalidArgument, NotFound
from acl.model import Acl
from indexer.errors import IndexUnavailable
from indexer.index.embedded import sqlite as embedded_sqlite
from indexer.index.embedded.ef_policy import EfPolicy
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.search import Planner
from indexer.index.filters import acl_filter, documents_filter
from indexer.index.port import ChunkRecord, StoreSpec
from tests.contract.index_contract import DIM, STORE, chunk, random_vectors

EVERYONE = acl_filter(["group:everyone"])


def corpus(rows: int, seed: int = 0, groups: int = 20, per_doc: int = 5) -> list[ChunkRecord]:
    """``rows`` chunks, ``per_doc`` per document, document d readable by ``group:g<d % groups>``."""
    return [
        chunk(
            f"d{i // per_doc:05d}",
            i % per_doc,
            v,
            allow=(f"group:g{(i // per_doc) % groups}", "group:everyone"),
        )
        for i, v in enumerate(random_vectors(rows, seed))
    ]


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.chunk.chunk_id for h in hits]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def index(data_dir: Path) -> Iterator[EmbeddedIndex]:
    index = EmbeddedIndex(data_dir, background=False)
    index.ensure(StoreSpec(STORE, DIM))
    yield index
    index.close()


# -- persistence --------------------------------------------------------------


def test_one_sqlite_file_per_store_in_wal_mode(index: EmbeddedIndex, data_dir: Path) -> None:
    index.upsert(STORE, corpus(10))
    path = data_dir / f"{STORE}.sqlite"
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 10


def test_reopened_index_sees_committed_data(index: EmbeddedIndex, data_dir: Path) -> None:
    chunks = corpus(200)
    index.upsert(STORE, chunks)
    index.set_document_acl(STORE, "d00000", Acl.of(["user:zed"]))
    index.delete_document(STORE, "d00001")
    query = random_vectors(1, seed=99)[0]
    before = [(h.chunk, round(h.score, 6)) for h in index.knn(STORE, query, 10, EVERYONE)]
    index.close()
    reopened = EmbeddedIndex(data_dir)
    try:
        assert reopened.count(STORE) == 195
        assert reopened.count(STORE, acl_filter(["user:zed"])) == 5
        after = [(h.chunk, round(h.score, 6)) for h in reopened.knn(STORE, query, 10, EVERYONE)]
        assert after == before
        with pytest.raises(InvalidArgument, match="dimension"):
            reopened.ensure(StoreSpec(STORE, DIM * 2))
    finally:
        reopened.close()


def test_second_instance_sees_the_first_ones_writes(index: EmbeddedIndex, data_dir: Path) -> None:
    other = EmbeddedIndex(data_dir)
    try:
        index.upsert(STORE, corpus(20))
        assert other.count(STORE) == 20
        index.delete_document(STORE, "d00000")
        index.set_document_acl(STORE, "d00001", Acl.of(["user:zed"]))
        assert other.count(STORE) == 15
        zed = other.exact(STORE, random_vectors(1, 3)[0], 10, acl_filter(["user:zed"]))
        assert sorted(ids(zed)) == [f"d00001#{i}" for i in range(5)]
        other.upsert(STORE, corpus(3, seed=5, per_doc=3))  # d00000 again, from the other side
        assert index.count(STORE, documents_filter(["d00000"])) == 3
        index.ensure(StoreSpec("second", DIM))
        assert other.count("second") == 0
        index.drop("second")
        with pytest.raises(NotFound):
            other.count("second")
    finally:
        other.close()


def test_upsert_that_dies_midway_leaves_the_document_fully_old(
    index: EmbeddedIndex, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = [chunk("doc", i, v, text="old") for i, v in enumerate(random_vectors(4, seed=1))]
    index.upsert(STORE, old)
    real = embedded_sqlite.encode_row
    written: list[str] = []

    def dying(record: ChunkRecord, vector: bytes | None) -> tuple[object, ...]:
        if len(written) == 2:
            raise KeyboardInterrupt("killed")  # not an Exception: like a signal mid-write
        written.append(record.chunk_id)
        return real(record, vector)

    monkeypatch.setattr(embedded_sqlite, "encode_row", dying)
    new = [chunk("doc", i, v, text="new") for i, v in enumerate(random_vectors(3, seed=2))]
    with pytest.raises(KeyboardInterrupt):
        index.upsert(STORE, new)
    monkeypatch.setattr(embedded_sqlite, "encode_row", real)

    fresh = EmbeddedIndex(data_dir)
    try:
        for view in (index, fresh):
            hits = view.exact(STORE, old[0].vector, 10, documents_filter(["doc"]))  # type: ignore[arg-type]
            assert sorted(ids(hits)) == [f"doc#{i}" for i in range(4)]
            assert {h.chunk.text for h in hits} == {"old"}
    finally:
        fresh.close()


KILLED_WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import numpy as np
    from indexer.index.embedded.index import EmbeddedIndex
    from indexer.index.port import StoreSpec
    from tests.contract.index_contract import DIM, STORE, chunk, random_vectors
    index = EmbeddedIndex(Path(sys.argv[1]))
    index.ensure(StoreSpec(STORE, DIM))
    vectors = random_vectors(50, seed=1)
    version = 0
    while True:
        version += 1
        count = 20 + version % 30  # every version has another number of chunks
        for doc in ("a", "b", "c"):
            index.upsert(STORE, [chunk(doc, i, vectors[i], text=f"v{version}") for i in range(count)])
        if version == 3:
            print("ready", flush=True)
""")


def test_process_killed_mid_upsert_leaves_every_document_whole(data_dir: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(data_dir)],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == b"ready"
        finally:
            child.kill()  # SIGKILL: no cleanup, wherever the writer is
    index = EmbeddedIndex(data_dir)
    try:
        for doc in ("a", "b", "c"):
            hits = index.exact(STORE, random_vectors(1, 2)[0], 100, documents_filter([doc]))
            versions = {h.chunk.text for h in hits}
            assert len(versions) == 1
            version = int(versions.pop()[1:])
            assert sorted(ids(hits)) == sorted(f"{doc}#{i}" for i in range(20 + version % 30))
    finally:
        index.close()


def test_store_ids_name_safe_files(index: EmbeddedIndex) -> None:
    for bad in ("../escape", "", ".hidden", "a/b", "x" * 200):
        with pytest.raises(InvalidArgument):
            index.ensure(StoreSpec(bad, DIM))


def test_closed_index_is_unavailable(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir)
    index.ensure(StoreSpec(STORE, DIM))
    index.close()
    with pytest.raises(IndexUnavailable):
        index.count(STORE)


# -- the HNSW graph -----------------------------------------------------------


def recall(index: EmbeddedIndex, filter_: dict, queries: np.ndarray, k: int = 10) -> float:  # type: ignore[type-arg]
    found = total = 0
    for query in queries:
        exact = set(ids(index.exact(STORE, query, k, filter_)))
        approximate = index.knn(STORE, query, k, filter_)
        assert len(approximate) == len(exact)
        found += len(exact & set(ids(approximate)))
        total += len(exact)
    return found / total


def test_small_store_never_builds_a_graph(index: EmbeddedIndex) -> None:
    index.upsert(STORE, corpus(500))
    index.prepare(STORE)
    index.knn(STORE, random_vectors(1, 1)[0], 10, EVERYONE)
    stats = index.stats(STORE)
    assert stats.graph_rows == 0 and stats.graph_builds == 0 and stats.last_plan == "exact"


def test_broad_filters_use_hnsw_and_narrow_ones_exact(index: EmbeddedIndex) -> None:
    index.upsert(STORE, corpus(6000))
    index.prepare(STORE)
    stats = index.stats(STORE)
    assert stats.graph_rows == 6000 and stats.ef_policy.narrowest <= 0.05
    queries = random_vectors(30, seed=21)
    assert recall(index, EVERYONE, queries) >= 0.98
    assert index.stats(STORE).last_plan == "hnsw"
    # The engine's usual search (k=60) is planned on its own calibration, and keeps the recall.
    policy = stats.ef_policy
    assert policy.wide and policy.wide[0][0] == 1.0 and policy.points[0][0] == 1.0
    assert recall(index, EVERYONE, queries, k=60) >= 0.98
    assert index.stats(STORE).last_plan == "hnsw"
    assert recall(index, acl_filter(["group:g3"]), queries) == 1.0  # 5 %: exact is cheaper
    assert index.stats(STORE).last_plan == "exact"


def test_graph_that_misses_the_recall_target_is_not_used(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=Planner(recall_target=1.01), background=False)
    index.ensure(StoreSpec(STORE, DIM))
    index.upsert(STORE, corpus(6000))
    index.prepare(STORE)
    stats = index.stats(STORE)
    assert stats.graph_builds == 1 and stats.graph_rows == 0
    for query in random_vectors(5, seed=4):
        index.knn(STORE, query, 10, EVERYONE)
    index.prepare(STORE)
    stats = index.stats(STORE)
    assert stats.last_plan == "exact" and stats.graph_builds == 1  # not bought again
    index.close()


def test_graph_is_bought_once_queries_have_paid_for_it(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=Planner(build_cost_us_per_row=1.0), background=False)
    index.ensure(StoreSpec(STORE, DIM))
    index.upsert(STORE, corpus(6000))
    plans = []
    for query in random_vectors(40, seed=4):
        index.knn(STORE, query, 10, EVERYONE)
        plans.append(index.stats(STORE).last_plan)
    assert plans[0] == "exact" and plans[-1] == "hnsw"
    assert index.stats(STORE).graph_builds == 1
    index.close()


def test_background_build_does_not_block_queries(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=Planner(build_cost_us_per_row=0.0))
    index.ensure(StoreSpec(STORE, DIM))
    index.upsert(STORE, corpus(6000))
    query = random_vectors(1, seed=4)[0]
    first = index.knn(STORE, query, 10, EVERYONE)  # answered exactly; starts the build
    index.prepare(STORE)  # waits for the builder
    assert index.stats(STORE).graph_builds == 1
    assert ids(index.knn(STORE, query, 10, EVERYONE)) == ids(first)
    assert index.stats(STORE).last_plan == "hnsw"
    index.close()


def test_appended_rows_are_searched_before_and_after_joining_the_graph(
    index: EmbeddedIndex,
) -> None:
    index.upsert(STORE, corpus(6000))
    index.prepare(STORE)
    target = random_vectors(1, seed=77)[0]
    index.upsert(STORE, [chunk("new", 0, target), *corpus(499, seed=8)[:-1]])
    assert index.stats(STORE).graph_rows == 6000  # the tail waits for tail_rows
    assert ids(index.knn(STORE, target, 10, EVERYONE))[0] == "new#0"
    assert index.stats(STORE).last_plan == "hnsw"
    index.prepare(STORE)
    stats = index.stats(STORE)
    assert stats.graph_rows == stats.rows + stats.tombstones and stats.graph_builds == 1
    assert ids(index.knn(STORE, target, 10, EVERYONE))[0] == "new#0"


def test_deleted_and_reacled_rows_never_come_out_of_the_graph(index: EmbeddedIndex) -> None:
    chunks = corpus(6000)
    index.upsert(STORE, chunks)
    index.prepare(STORE)
    index.delete_document(STORE, chunks[0].document_id)
    index.set_document_acl(STORE, chunks[5].document_id, Acl.of(["user:only"]))
    for victim in (chunks[0], chunks[5]):
        hits = index.knn(STORE, victim.vector, 10, EVERYONE)  # type: ignore[arg-type]
        assert index.stats(STORE).last_plan == "hnsw"
        assert victim.document_id not in {h.chunk.document_id for h in hits}
    assert ids(index.knn(STORE, chunks[5].vector, 1, acl_filter(["user:only"]))) == [  # type: ignore[arg-type]
        chunks[5].chunk_id
    ]


def test_graph_is_rebuilt_after_many_tombstones(index: EmbeddedIndex) -> None:
    chunks = corpus(6000)
    index.upsert(STORE, chunks)
    index.prepare(STORE)
    removed = {c.document_id for c in chunks[:2400]}  # 40 % of the rows
    for document_id in sorted(removed):
        index.delete_document(STORE, document_id)
    stats = index.stats(STORE)
    # Compacted once tombstones passed 30 %: the graph over the old rows is gone.
    assert stats.rows == 3600 and stats.tombstones < 2400 - 1800 and stats.graph_rows == 0
    query = chunks[0].vector
    hits = index.knn(STORE, query, 10, EVERYONE)  # type: ignore[arg-type]
    assert not removed & {h.chunk.document_id for h in hits}
    index.prepare(STORE)
    stats = index.stats(STORE)
    assert stats.graph_builds == 2 and stats.graph_rows == 3600 + stats.tombstones
    assert recall(index, EVERYONE, random_vectors(20, seed=5)) >= 0.98


def test_under_filled_hnsw_falls_back_to_exact(data_dir: Path) -> None:
    stingy = Planner(exact_row_cost_us=1000.0, ef_per_k_over_selectivity=0.001, ef_min=1, calibrate=False)
    index = EmbeddedIndex(data_dir, planner=stingy, background=False)
    index.ensure(StoreSpec(STORE, DIM))
    index.upsert(STORE, corpus(6000, groups=200))
    index.prepare(STORE)
    narrow = acl_filter(["group:g7"])  # 0.5 %: efSearch 10 walks past most of them
    for query in random_vectors(10, seed=6):
        hits = index.knn(STORE, query, 10, narrow)
        assert len(hits) == 10
        if index.stats(STORE).last_plan == "hnsw+exact":
            assert ids(hits) == ids(index.exact(STORE, query, 10, narrow))
    assert index.stats(STORE).plans.get("hnsw+exact", 0) > 0
    index.close()


def test_concurrent_queries_and_writes(data_dir: Path) -> None:
    index = EmbeddedIndex(data_dir, planner=Planner(build_cost_us_per_row=0.0))
    index.ensure(StoreSpec(STORE, DIM))
    chunks = corpus(5000)
    index.upsert(STORE, chunks)
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        try:
            for query in random_vectors(60, seed=seed):
                hits = index.knn(STORE, query, 10, EVERYONE)
                assert len(hits) == 10
                scores = [h.score for h in hits]
                assert scores == sorted(scores, reverse=True)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for i in range(30):
        index.upsert(STORE, corpus(10, seed=100 + i, per_doc=10))
        index.delete_document(STORE, chunks[i * 5].document_id)
    for thread in threads:
        thread.join()
    assert not errors
    assert index.count(STORE) == 5000 - 30 * 5 + 10
    index.close()


def test_ef_policy_interpolates_between_calibrated_selectivities() -> None:
    policy = EfPolicy(((0.5, 32), (0.2, 64), (0.05, 2048)))
    assert policy.ef(10, 0.9) == 32 and policy.ef(10, 0.5) == 32 and policy.ef(10, 0.2) == 64
    assert 64 < (policy.ef(10, 0.1) or 0) < 2048
    assert policy.ef(10, 0.05) == 2048 and policy.ef(10, 0.04) is None
    assert policy.ef(20, 0.5) == 64  # efSearch grows with k
    assert policy.narrowest == 0.05 and policy.usable
    assert not EfPolicy(()).usable and EfPolicy(()).ef(10, 1.0) is None
    model = EfPolicy.model(ef_min=64, per_k_over_selectivity=12.0)
    assert model.ef(10, 1.0) == 120 and model.ef(10, 0.01) == 12_000


def test_ef_policy_interpolates_in_k_between_its_two_calibrations() -> None:
    linear = EfPolicy(((1.0, 32), (0.2, 64)))
    policy = EfPolicy(((1.0, 32), (0.2, 64)), wide=((1.0, 96), (0.5, 128)))
    assert linear.ef(60, 1.0) == 192 and linear.ef(120, 1.0) == 384  # no second calibration: linear in k
    assert policy.ef(10, 1.0) == 32 and policy.ef(5, 1.0) == 32  # at or below k=10: the first calibration
    assert policy.ef(60, 1.0) == 96 and policy.ef(60, 0.5) == 128  # k=60: the second
    assert policy.ef(120, 1.0) == 192  # above it: linear from the second
    assert 32 * 3 > (policy.ef(30, 1.0) or 0) > 32 * (96 / 32) ** 0.6  # geometric in k between the two
    assert policy.ef(70, 1.0) == 112 and policy.ef(70, 1.0) == math.ceil(96 * 70 / 60)
    # Narrower than k=60 kept its recall (or was measured): not served above k=10, at k=10 as before.
    assert policy.ef(60, 0.4999) is None and policy.ef(20, 0.3) is None and policy.ef(10, 0.3) == linear.ef(10, 0.3)
    measured_nowhere = EfPolicy(((1.0, 32),), wide=())
    assert measured_nowhere.ef(10, 1.0) == 32 and measured_nowhere.ef(11, 1.0) is None


def test_pages_and_anchor_survive_a_reopen(index: EmbeddedIndex, data_dir: Path) -> None:
    written = dataclasses.replace(chunk("pdf", 0, np.ones(DIM)), pages=(12, 13), anchor="sec-2")
    index.upsert(STORE, [written])
    index.close()
    reopened = EmbeddedIndex(data_dir)
    try:
        (hit,) = reopened.exact(STORE, np.ones(DIM, np.float32) / np.sqrt(DIM), 1, EVERYONE)
        assert (hit.chunk.pages, hit.chunk.anchor) == ((12, 13), "sec-2")
    finally:
        reopened.close()


@pytest.mark.parametrize("reopen_with", ["open", "ensure"])
def test_a_file_from_before_pages_and_anchors_is_upgraded_in_place(
    index: EmbeddedIndex, data_dir: Path, reopen_with: str
) -> None:
    index.upsert(STORE, corpus(10))
    index.close()
    path = data_dir / f"{STORE}.sqlite"
    with sqlite3.connect(path) as conn:  # the schema as DocQA wrote it before the two columns existed
        conn.execute("ALTER TABLE chunks DROP COLUMN pages")
        conn.execute("ALTER TABLE chunks DROP COLUMN anchor")
    reopened = EmbeddedIndex(data_dir)
    try:
        if reopen_with == "ensure":
            reopened.ensure(StoreSpec(STORE, DIM))
        old = reopened.exact(STORE, random_vectors(1, 9)[0], 10, EVERYONE)
        assert len(old) == 10 and all(h.chunk.pages == () and h.chunk.anchor == "" for h in old)
        fresh = dataclasses.replace(chunk("new", 0, np.ones(DIM)), pages=(3,), anchor="intro")
        reopened.upsert(STORE, [fresh])
        (hit,) = reopened.exact(STORE, np.ones(DIM, np.float32) / np.sqrt(DIM), 1, documents_filter(["new"]))
        assert hit.chunk == fresh
    finally:
        reopened.close()
    with sqlite3.connect(path) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
        assert {"pages", "anchor"} <= columns
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == "1"
