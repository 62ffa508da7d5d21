"""Two processes on one store file: a serving index (background graph work, as ``docqa serve`` runs it)
adopts the HNSW graph that another process (as ``docqa index`` ends) builds and saves after it started."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

from acl.model import Acl
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.embedded.search import Planner
from indexer.index.filters import acl_filter
from indexer.index.port import StoreSpec
from tests.contract.index_contract import DIM, STORE, random_vectors
from tests.unit.test_embedded_live import EVERYONE, ROWS, corpus, ids

ROOT = Path(__file__).resolve().parents[2]

INDEXER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from acl.model import Acl
    from indexer.index.embedded.index import EmbeddedIndex
    from tests.contract.index_contract import STORE
    index = EmbeddedIndex(Path(sys.argv[1]))
    index.prepare(STORE)  # builds the graph and saves it
    index.set_document_acl(STORE, "d00004", Acl.of(["user:only"]))  # after the save
    index.close()
""")


def test_a_serving_index_adopts_the_graph_another_process_saves(tmp_path: Path) -> None:
    server = EmbeddedIndex(tmp_path, planner=Planner(graph_file_check_s=0.05))  # background graph work
    try:
        server.ensure(StoreSpec(STORE, DIM))
        chunks = corpus(ROWS)
        server.upsert(STORE, chunks)
        queries = random_vectors(5, seed=12)
        server.knn(STORE, queries[0], 10, EVERYONE)
        assert server.stats(STORE).graph_rows == 0
        subprocess.run([sys.executable, "-c", INDEXER, str(tmp_path)], check=True, cwd=ROOT, timeout=300)
        deadline = time.monotonic() + 120
        while server.stats(STORE).graph_adoptions == 0:  # adopted by a thread of its own, off the queries
            assert time.monotonic() < deadline, "the saved graph was never adopted"
            server.knn(STORE, queries[0], 10, EVERYONE)
            time.sleep(0.05)
        for query in queries:
            approximate = ids(server.knn(STORE, query, 10, EVERYONE))
            assert server.stats(STORE).last_plan == "hnsw"
            assert approximate == ids(server.exact(STORE, query, 10, EVERYONE))
        stats = server.stats(STORE)
        assert stats.graph_loaded and stats.graph_builds == 0 and stats.graph_rows == ROWS
        reacled = chunks[20]  # document d00004, re-ACLed after the graph was saved
        assert reacled.document_id == "d00004"
        hits = server.knn(STORE, reacled.vector, 10, EVERYONE)  # type: ignore[arg-type]
        assert "d00004" not in {h.chunk.document_id for h in hits}
        only = server.knn(STORE, reacled.vector, 1, acl_filter(["user:only"]))  # type: ignore[arg-type]
        assert ids(only) == [reacled.chunk_id]
        assert Acl.of(["user:only"]).allow == only[0].chunk.acl.allow
    finally:
        server.close()
