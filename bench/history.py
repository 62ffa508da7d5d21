"""History listing latency for one user at 100k stored queries (SQLite settings database, on disk).

    python bench/history.py [--rows 100000] [--repeat 200]

One user's ``--rows`` answered queries (plus as many of 20 other users') are written straight into
``query_history`` of a fresh settings database, each citing 1-4 of 200 documents readable by everyone.
Then ``HistoryService.page`` — the path every interface takes: keyset page, ratings, and the access
re-check of every cited document against the ACL — is timed for a page of 20:

- the first (newest) page,
- a page deep in the history (after a cursor 90 % of the way back),
- the first page of a user with only 1,000 entries (the baseline);

p50/p99 in ms and the ratios to the baseline are printed. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.documents import DocumentRecord
from service.config import Settings
from service.domain.history import Position
from service.domain.queries import Caller
from service.domain.store import Store
from service.history.build import build_history
from service.persistence.sql_history import HistoryRow
from service.persistence.sql_settings import SqlSettingsRepository

STORE = "bench"
DOCUMENTS = 200


def fill(repo: SqlSettingsRepository, user: str, rows: int, start: datetime, rng: random.Random) -> None:
    batch: list[dict[str, object]] = []
    with repo.engine.begin() as connection:
        for i in range(rows):
            cited = rng.sample(range(DOCUMENTS), rng.randint(1, 4))
            sources = [
                {
                    "document_id": f"doc-{d}",
                    "chunk_id": f"doc-{d}#0",
                    "title": f"Doc {d}",
                    "score": 0.5,
                    "relevance": 0.7,
                }
                for d in cited
            ]
            batch.append(
                {
                    "query_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                    "user_id": user,
                    "store_id": STORE,
                    "query_class": "vector",
                    "conversation_id": str(uuid.uuid4()),
                    "question": f"question number {i} about vacation days and carry-over rules?",
                    "rewritten_question": None,
                    "answer": "Employees receive 25 days of paid vacation per year [1]. " * 3,
                    "sources": json.dumps(sources),
                    "level": 0.5,
                    "threshold": 0.35,
                    "created_at": start + timedelta(seconds=i * 7),
                }
            )
            if len(batch) == 5000:
                connection.execute(HistoryRow.__table__.insert(), batch)
                batch = []
        if batch:
            connection.execute(HistoryRow.__table__.insert(), batch)


def timed(work: object, repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000, help="entries of the measured user")
    parser.add_argument("--repeat", type=int, default=200, help="timed calls per figure")
    args = parser.parse_args()
    if args.rows < 20 or args.repeat < 1:
        parser.error("--rows must be at least 20 (a page), --repeat at least 1")
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        repo = SqlSettingsRepository.from_url(f"sqlite:///{Path(tmp) / 'settings.sqlite'}")
        repo.create_store(Store(STORE, STORE, "fake", 0.5, 0.1, 0.6, 8))
        for d in range(DOCUMENTS):
            repo.save_document(
                DocumentRecord(STORE, f"doc-{d}", f"Doc {d}", f"file:///doc-{d}", "h", "", Acl.of(["group:everyone"]))
            )
        start = datetime(2026, 1, 1, tzinfo=UTC)
        began = time.perf_counter()
        fill(repo, "heavy", args.rows, start, rng)
        for other in range(20):
            fill(repo, f"other-{other}", args.rows // 20, start, rng)
        fill(repo, "light", 1000, start, rng)
        print(f"wrote {args.rows * 2 + 1000:,} entries in {time.perf_counter() - began:.1f} s")
        history = build_history(Settings(data_dir=Path(tmp)), repo)
        heavy, light = Caller("heavy"), Caller("light")
        deep_entry = history.repository.entries(
            "heavy", 1, Position(start + timedelta(seconds=int(args.rows * 0.1) * 7), "~")
        )[0]
        deep = Position.of(deep_entry).cursor()
        assert len(history.page(heavy, 20, deep).entries) == 20
        base = timed(lambda: history.page(light, 20), args.repeat)
        first = timed(lambda: history.page(heavy, 20), args.repeat)
        far = timed(lambda: history.page(heavy, 20, deep), args.repeat)
        print(f"history page of 20, p50 / p99 ms ({args.repeat} calls each; access re-check included)")
        print(f"  1k entries, first page (baseline)   {base[0]:7.2f} / {base[1]:7.2f}")
        for label, (p50, p99) in ((f"{args.rows:,} entries, first page", first), ("  page 90 % deep", far)):
            print(f"  {label:<36}{p50:7.2f} / {p99:7.2f}   x{p50 / base[0]:.2f} of the baseline")
        repo.close()
    figures = {"baseline, 1k entries": base, "first page": first, "page 90 % deep": far}
    record(
        "history",
        {
            "rows": args.rows,
            "repeat": args.repeat,
            **{
                label: {"p50_ms": p50, "p99_ms": p99, "x_baseline": p50 / base[0]}
                for label, (p50, p99) in figures.items()
            },
        },
    )


if __name__ == "__main__":
    main()
