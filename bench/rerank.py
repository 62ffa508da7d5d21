"""What the offline reranker costs a query: its features on 30 candidates, next to embedding the question.

Builds candidate sets like a query's (chunks of ~250 words from a dozen
documents, each chunk with its title and heading path), embeds the question
with the packaged MiniLM (the baseline every query already pays), then times
the offline reranker: its default (text evidence only: overlap, title overlap,
document bonus) on chunks it has not seen and on chunks whose words it
remembers from earlier queries, the ``heading`` feature on with its vectors cached (titles
repeat from query to query) and not cached (every title new: at most 8 new
ones are embedded per query), and the ``sentence`` feature on (the two off by
default: their rows show what they would cost). Prints the p50 and the best
time per query in ms and the p50's ratio to the baseline; the machine's noise
cancels in the ratio, and the best time shows the cost on an idle CPU.

    .venv/bin/python bench/rerank.py [--queries 20] [--candidates 30] [--threads 2]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from provenance import record  # bench/provenance.py (bench/ is on sys.path when run as a script)

from acl.model import Acl
from indexer.embedder import SentenceTransformerEmbedder
from indexer.index import ChunkRecord, SearchHit
from service.ranking.offline import OfflineReranker, OfflineWeights

ACL = Acl.of(["group:everyone"])
VOCABULARY = (  # noqa: SIM905 - a word list reads better as text
    "the travel policy reimburses economy flights booked at least fourteen days ahead and hotel nights up to the "
    "regional cap receipts are required for every expense above twenty five euros unused vacation days may be "
    "carried over into the next year with the approval of a manager requests go through the portal the backup "
    "job rotates the signing key every night and keeps seven generations of the archive on the replica servers"
).split()
QUESTIONS = (
    "How many unused vacation days can I carry over?",
    "Which expenses need a receipt?",
    "How often is the signing key rotated?",
    "Can I book a business class flight?",
)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(8, 22))).capitalize() + "."


def candidates(rng: random.Random, count: int, tag: str) -> list[SearchHit]:
    """``count`` hits of ~250 words from a dozen documents; ``tag`` makes every title new."""
    hits: list[SearchHit] = []
    for number in range(count):
        document = f"doc{rng.randint(0, 11)}"
        text = " ".join(sentence(rng) for _ in range(16))
        title = f"{document.capitalize()} {tag} handbook"
        headings = (f"Chapter {rng.randint(1, 4)}", f"Section {rng.choice(VOCABULARY)}")
        chunk = ChunkRecord(
            f"{document}#{number}", document, number, text, title, f"file:///{document}", headings, 0, len(text), ACL
        )
        hits.append(SearchHit(chunk, rng.uniform(0.2, 0.7)))
    return hits


def timed(run: Callable[[int], object], runs: int) -> list[float]:
    """Milliseconds per call of ``run(i)``."""
    out: list[float] = []
    for i in range(runs):
        start = time.perf_counter()
        run(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target machine has 2 cores)")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    embedder = SentenceTransformerEmbedder()
    rng = random.Random(17)
    sets = [candidates(rng, args.candidates, "fixed") for _ in range(args.queries)]
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(args.queries)]
    vectors = [embedder.embed_query(q) for q in questions]  # warms the model up too
    default = OfflineReranker(embedder)
    heading = OfflineReranker(embedder, weights=OfflineWeights(heading=0.3))
    sentences = OfflineReranker(embedder, weights=OfflineWeights(sentence=0.3))
    for _ in range(1 + args.candidates // 8):  # at most 8 new titles per query: until all of `sets` are cached
        for i in range(args.queries):
            heading.rerank(questions[i], vectors[i], sets[i])
    fresh = [candidates(random.Random(i), args.candidates, f"new{i}") for i in range(args.queries)]
    unseen = [candidates(random.Random(-1 - i), args.candidates, f"unseen{i}") for i in range(args.queries)]
    cold = [candidates(random.Random(1000 + i), args.candidates, f"cold{i}") for i in range(args.queries)]
    runs: dict[str, Callable[[int], object]] = {
        "embed the question (baseline)": lambda i: embedder.embed_query(questions[i]),
        "default, chunks seen before": lambda i: default.rerank(questions[i], vectors[i], sets[i]),
        "default, chunks not seen before": lambda i: default.rerank(questions[i], vectors[i], cold[i]),
        "heading on, vectors cached": lambda i: heading.rerank(questions[i], vectors[i], sets[i]),
        "heading on, every title new (8 embedded)": lambda i: heading.rerank(questions[i], vectors[i], fresh[i]),
        "sentence on, nothing cached": lambda i: sentences.rerank(questions[i], vectors[i], unseen[i]),
    }
    rows = [(label, timed(run, args.queries)) for label, run in runs.items()]
    baseline = statistics.median(rows[0][1])
    print(f"offline reranker, {args.candidates} candidates, {args.queries} queries, torch threads {args.threads}")
    print("| step | p50 ms | best ms | p50 / baseline |")
    print("| --- | ---: | ---: | ---: |")
    figures = {}
    for label, times in rows:
        p50 = statistics.median(times)
        print(f"| {label} | {p50:.1f} | {min(times):.1f} | {p50 / baseline:.2f} |")
        figures[label] = {"p50_ms": p50, "best_ms": min(times), "p50_over_baseline": p50 / baseline}
    record("rerank", {"queries": args.queries, "candidates": args.candidates, "threads": args.threads, **figures})


if __name__ == "__main__":
    main()
