"""Indexing throughput of the whole pipeline next to raw ``model.encode`` on the same chunks.

    python bench/indexing.py [--docs 120] [--repeat 2]

Generates a deterministic Markdown corpus (sections of pseudo-English
paragraphs, so chunks fill the model's 256-token limit like real prose), runs
the real pipeline (loader → chunker → embedder → embedded index → SQLite
catalog) into a fresh data directory, then encodes exactly the chunk texts it
produced with the same model, and prints chunks/s of both and their ratio.
Runs alternate (raw, pipeline, raw, pipeline ...) so machine noise hits both.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from provenance import record  # noqa: E402  (bench/provenance.py)

WORDS = """
    policy employee revenue quarter budget travel expense security password incident report
    engineering rotation salary manager approval vacation allowance carry over request portal
    finance board margin growth subscription hardware data centre hiring programme review
    customer contract invoice payment supplier audit compliance risk control process system the
    a of to and in for on with by from at as is are was were be will may must should
""".split()  # noqa: SIM905


def make_corpus(root: Path, docs: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    (root / "acl.yaml").write_text("documents:\n  - match: '**'\n    allow: [group:everyone]\n")
    for d in range(docs):
        parts = [f"# Document {d}\n"]
        for s in range(rng.randint(2, 5)):
            parts.append(f"## Section {s}\n")
            for _ in range(rng.randint(1, 4)):
                sentences = []
                for _ in range(rng.randint(3, 9)):
                    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 22))]
                    sentences.append(" ".join(words).capitalize() + ".")
                parts.append(" ".join(sentences) + "\n")
        (root / f"doc{d:04d}.md").write_text("\n".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=120)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from indexer.chunker import Chunker
    from indexer.loaders import load_path
    from service.bootstrap import build_app
    from service.config import load_settings

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        make_corpus(corpus, args.docs)
        # The chunk texts the pipeline will produce, for the raw baseline.
        base = build_app(load_settings(None, data_dir=Path(tmp) / "probe"))
        embedder = base.embedder()
        chunker = Chunker(embedder.tokenizer, embedder.max_tokens)
        texts = [c.text for p in sorted(corpus.glob("*.md")) for c in chunker.chunk(load_path(p))]
        embedder.embed_documents(texts[:64])  # load and warm the model once for both
        print(
            f"corpus: {args.docs} Markdown documents, {len(texts)} chunks "
            f"(≤ {embedder.max_tokens} tokens each), model {embedder.model_name}"
        )
        raw_rates, pipe_rates = [], []
        for run in range(args.repeat):
            start = time.perf_counter()
            embedder.embed_documents(texts)
            raw_rates.append(len(texts) / (time.perf_counter() - start))

            app = build_app(
                load_settings(None, data_dir=Path(tmp) / f"data{run}"), embedder_factory=lambda _name: embedder
            )
            start = time.perf_counter()
            report = app.ingestor("bench").index_folder(corpus)
            pipe_rates.append(report.chunks / (time.perf_counter() - start))
            assert report.chunks == len(texts), (report.chunks, len(texts))
            app.close()
            print(
                f"run {run + 1}: raw encode {raw_rates[-1]:7.1f} chunks/s   "
                f"pipeline {pipe_rates[-1]:7.1f} chunks/s   ratio {pipe_rates[-1] / raw_rates[-1]:.3f}"
            )
        raw, pipe = max(raw_rates), max(pipe_rates)
        print(
            f"best of {args.repeat}: raw encode {raw:.1f} chunks/s, pipeline {pipe:.1f} chunks/s, "
            f"ratio {pipe / raw:.3f} (target ≥ 0.9)"
        )
        record(
            "indexing",
            {
                "docs": args.docs,
                "chunks": len(texts),
                "model": embedder.model_name,
                "raw_chunks_per_s": raw_rates,
                "pipeline_chunks_per_s": pipe_rates,
                "ratio_best": pipe / raw,
            },
        )


if __name__ == "__main__":
    main()
