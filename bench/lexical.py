"""Lexical (BM25) search in the embedded index: its latency next to exact kNN, and the FTS5 tokenizer choice.

    python bench/lexical.py [--chunks 20000] [--queries 200]
    python bench/lexical.py --pages /usr/share/doc/postgresql-doc-15/html [--questions bench/lexical_questions.yaml]

Latency: a store of ``--chunks`` chunks in an on-disk ``EmbeddedIndex`` (384-d vectors, ten chunks per
document, each document readable by one of 200 groups): synthetic text (Zipf-distributed words, ~150 per
chunk; questions of 4-8 content words) or, with ``--pages``, the pages' chunks repeated up to ``--chunks``
and the questions of ``--questions``. For callers who read 50 %, 5 % and 0.5 % of the chunks it prints the
p50/p99 of ``lexical``, of the same search in one FTS5 pass sorting every matching row (how it ran
before its bounded first pass; baseline) and of ``exact`` (k = 60, what the query path asks for 30 fused
candidates), and their ratios.

Tokenizer: with ``--pages``, every HTML page of the folder is cut into ~1,000-character chunks (title and
first heading kept) and indexed twice in FTS5, with ``unicode61`` and with ``porter unicode61``; the
paraphrased questions of ``--questions`` (each names the pages that answer it) are searched with the
query the adapter builds, and page-level hit@1, hit@5 and MRR are printed for each. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import re
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from figures import percentiles  # bench/figures.py
from provenance import record  # bench/provenance.py

from acl.model import Acl
from indexer.index.embedded import lexical as embedded_lexical
from indexer.index.embedded.fulltext import WEIGHTS, match_expression
from indexer.index.embedded.index import EmbeddedIndex
from indexer.index.filters import acl_filter
from indexer.index.lexical import query_terms
from indexer.index.port import ChunkRecord, StoreSpec

DIM = 384
K = 60
GROUPS = 200
STORE = "bench"
CALLERS = {
    "50%": ["group:g0", *(f"group:g{g}" for g in range(1, 100))],
    "5%": [f"group:g{g}" for g in range(10)],
    "0.5%": ["group:g0"],
}


def synthetic_texts(chunks: int, seed: int) -> tuple[list[str], list[str]]:
    """Chunk texts of Zipf-distributed words (~150 each) and questions of 4-8 content words plus stopwords."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(20_000)]
    weights = 1.0 / np.arange(1, len(vocabulary) + 1)
    weights /= weights.sum()
    texts = [
        " ".join(vocabulary[w] for w in rng.choice(len(vocabulary), size=int(rng.integers(100, 200)), p=weights))
        for _ in range(chunks)
    ]
    # Content words of a question are not the corpus's most frequent ones (those behave like stopwords).
    questions = [
        "how does the " + " ".join(vocabulary[w] for w in rng.integers(100, len(vocabulary), int(rng.integers(4, 9))))
        for _ in range(1000)
    ]
    return texts, questions


def build_store(data_dir: Path, texts: list[str], seed: int) -> EmbeddedIndex:
    """An on-disk store of ``texts``, ten chunks per document, each document readable by one of 200 groups."""
    rng = np.random.default_rng(seed)
    index = EmbeddedIndex(data_dir, background=False)
    index.ensure(StoreSpec(STORE, DIM))
    batch: list[ChunkRecord] = []
    for row, text in enumerate(texts):
        vector = rng.standard_normal(DIM).astype(np.float32)
        document = row // 10
        batch.append(
            ChunkRecord(
                chunk_id=f"d{document}#{row % 10}",
                document_id=f"d{document}",
                ordinal=row % 10,
                text=text,
                title=f"Document {document}",
                source_uri="",
                heading_path=(),
                start=0,
                end=1,
                acl=Acl.of([f"group:g{document % GROUPS}"]),
                vector=vector / np.linalg.norm(vector),
            )
        )
        if row % 10 == 9 and len(batch) >= 1000:
            index.upsert(STORE, batch)
            batch = []
    if batch:
        index.upsert(STORE, batch)
    return index


@contextlib.contextmanager
def one_full_pass() -> Iterator[None]:
    """The search as it was before its bounded first pass: one FTS5 query sorting every matching row."""
    saved = embedded_lexical.FIRST_PASS_SPARE
    embedded_lexical.FIRST_PASS_SPARE = 10**9  # the first limit becomes MAX_RANKED
    try:
        yield
    finally:
        embedded_lexical.FIRST_PASS_SPARE = saved


def latency(texts: list[str], questions: list[str], queries: int, seed: int) -> dict[str, dict[str, float]]:
    """Per caller: the p50/p99 ms of ``lexical``, of one full FTS5 pass (the baseline) and of ``exact``."""
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        index = build_store(Path(tmp), texts, seed)
        print(f"{len(texts)} chunks indexed in {time.perf_counter() - started:.1f} s (FTS5 kept in step)")
        rng = np.random.default_rng(seed + 1)
        print(
            f"{'readable':>8} {'lexical p50':>12} {'p99':>8} {'one pass p50':>13} {'p99':>8} {'exact p50':>10} "
            f"{'p99':>8} {'one pass/lexical':>17} {'lexical/exact':>14}"
        )
        for name, groups in CALLERS.items():
            allowed = acl_filter(groups)
            lexical_ms: list[float] = []
            full_ms: list[float] = []
            exact_ms: list[float] = []
            for i in range(queries + 5):
                question = questions[i % len(questions)]
                vector = rng.standard_normal(DIM).astype(np.float32)
                vector /= np.linalg.norm(vector)
                t0 = time.perf_counter()
                index.lexical(STORE, question, K, allowed)
                t1 = time.perf_counter()
                index.exact(STORE, vector, K, allowed)
                t2 = time.perf_counter()
                with one_full_pass():
                    index.lexical(STORE, question, K, allowed)
                t3 = time.perf_counter()
                if i >= 5:  # warm-up
                    lexical_ms.append((t1 - t0) * 1000)
                    exact_ms.append((t2 - t1) * 1000)
                    full_ms.append((t3 - t2) * 1000)
            lex50, lex99 = percentiles(lexical_ms)
            full50, full99 = percentiles(full_ms)
            ex50, ex99 = percentiles(exact_ms)
            print(
                f"{name:>8} {lex50:>10.2f}ms {lex99:>6.2f}ms {full50:>11.2f}ms {full99:>6.2f}ms {ex50:>8.2f}ms "
                f"{ex99:>6.2f}ms {full50 / lex50:>16.2f}x {lex50 / ex50:>13.1f}x"
            )
            figures[name] = {
                "lexical_p50_ms": lex50,
                "lexical_p99_ms": lex99,
                "one_pass_p50_ms": full50,
                "one_pass_p99_ms": full99,
                "exact_p50_ms": ex50,
                "exact_p99_ms": ex99,
            }
        index.close()
    return figures


_TAG = re.compile(r"<[^>]+>")
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1>", re.S | re.I)
_TITLE = re.compile(r"<title>(.*?)</title>", re.S | re.I)
_HEADING = re.compile(r"<h[1-3][^>]*>(.*?)</h[1-3]>", re.S | re.I)


def _text(fragment: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", fragment))).strip()


def page_chunks(pages: Path, size: int = 1000) -> list[tuple[str, str, str, str]]:
    """(page, title, heading, text) of ~``size``-character chunks of every HTML page."""
    out = []
    for path in sorted(pages.glob("*.html")):
        raw = _SCRIPT.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
        found, first = _TITLE.search(raw), _HEADING.search(raw)
        title = _text(found.group(1)) if found else path.stem
        heading = _text(first.group(1)) if first else ""
        body = _text(raw)
        for start in range(0, len(body), size):
            out.append((path.name, title, heading, body[start : start + size]))
    return out


def tokenizers(pages: Path, questions_file: Path) -> dict[str, dict[str, float]]:
    """Per FTS5 tokenizer: page-level hit@1, hit@5, MRR and the p50 ms of the paraphrased questions."""
    figures = {}
    chunks = page_chunks(pages)
    cases = yaml.safe_load(questions_file.read_text())
    print(f"{len(chunks)} chunks of {len({c[0] for c in chunks})} pages; {len(cases)} questions")
    print(f"{'tokenizer':<38} {'hit@1':>6} {'hit@5':>6} {'MRR':>6} {'p50 ms':>7}")
    for tokenizer in ("unicode61 remove_diacritics 2", "porter unicode61 remove_diacritics 2"):
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(text, title, heading, page UNINDEXED, tokenize='{tokenizer}')")
        conn.executemany("INSERT INTO f (page, title, heading, text) VALUES (?, ?, ?, ?)", chunks)
        hits1 = hits5 = 0
        reciprocal = 0.0
        times = []
        for case in cases:
            match = match_expression(query_terms(case["question"]))
            t0 = time.perf_counter()
            rows = conn.execute(
                f"SELECT page FROM f WHERE f MATCH ? ORDER BY bm25(f, {', '.join(map(str, WEIGHTS))}) LIMIT 200",
                (match,),
            ).fetchall()
            times.append((time.perf_counter() - t0) * 1000)
            ranked = list(dict.fromkeys(r[0] for r in rows))
            rank = next((i + 1 for i, page in enumerate(ranked) if page in case["expected"]), None)
            hits1 += rank == 1
            hits5 += rank is not None and rank <= 5
            reciprocal += 1.0 / rank if rank else 0.0
        n = len(cases)
        p50 = percentiles(times)[0]
        print(f"{tokenizer:<38} {hits1 / n:>6.2f} {hits5 / n:>6.2f} {reciprocal / n:>6.2f} {p50:>7.2f}")
        figures[tokenizer] = {"hit@1": hits1 / n, "hit@5": hits5 / n, "mrr": reciprocal / n, "p50_ms": p50}
        conn.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pages", type=Path, help="a folder of HTML pages: their text, and the tokenizer comparison")
    parser.add_argument("--questions", type=Path, default=Path(__file__).with_name("lexical_questions.yaml"))
    args = parser.parse_args()
    if args.chunks < 1 or args.queries < 1:
        parser.error("--chunks and --queries must be at least 1")
    figures: dict[str, object] = {"chunks": args.chunks, "queries": args.queries}
    if args.pages is None:
        texts, questions = synthetic_texts(args.chunks, args.seed)
    else:
        if not args.pages.is_dir() or not args.questions.is_file():
            parser.error(f"--pages {args.pages} must be a folder and --questions {args.questions} a file")
        figures["pages"] = str(args.pages)
        figures["tokenizers"] = tokenizers(args.pages, args.questions)
        pages = [f"{title} {heading} {text}" for _, title, heading, text in page_chunks(args.pages)]
        if not pages:
            parser.error(f"--pages {args.pages} holds no HTML page (*.html)")
        texts = [pages[row % len(pages)] for row in range(args.chunks)]  # repeated up to --chunks
        questions = [case["question"] for case in yaml.safe_load(args.questions.read_text())]
    figures["latency"] = latency(texts, questions, args.queries, args.seed)
    record("lexical", figures)


if __name__ == "__main__":
    main()
