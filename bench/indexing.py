"""Indexing throughput of the whole pipeline next to raw ``model.encode`` on the same chunks.

    python bench/indexing.py [--docs 120] [--repeat 2]
    python bench/indexing.py --precision bf16 [--threads 1,2] [--batch-size 32]

Generates a deterministic Markdown corpus (sections of pseudo-English
paragraphs, so chunks fill the model's 256-token limit like real prose), runs
the real pipeline (loader → chunker → embedder → embedded index → SQLite
catalog) into a fresh data directory, then encodes exactly the chunk texts it
produced with the same model, and prints chunks/s of both and their ratio.
Runs alternate (raw, pipeline, raw, pipeline ...) so machine noise hits both.

``--precision int8|bf16`` instead encodes the same chunks with fp32 ONNX
Runtime and with ``embedding.quantize`` set to it, at each thread count of
``--threads``, alternating the two, and prints chunks/s, chunks/s per core and
the ratio to fp32 in the same run: on a shared machine only the ratio travels.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal, cast

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
    parser.add_argument("--precision", choices=["int8", "bf16"], help="compare with fp32 at each --threads")
    parser.add_argument("--threads", default="1,2", help="thread counts of --precision (default 1,2)")
    parser.add_argument("--batch-size", type=int, default=32, help="encoder batch of --precision (default 32)")
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
        if args.precision:
            from indexer.onnx_model import shared_cache_dir

            caches = [Path(tmp) / "models", *filter(None, [shared_cache_dir()])]
            threads = [int(t) for t in args.threads.split(",")]
            compare_precision(texts, args.precision, threads, args.batch_size, args.repeat, caches)
            return
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


def compare_precision(
    texts: list[str], precision: str, threads: list[int], batch_size: int, repeat: int, caches: list[Path]
) -> None:
    """Raw encoding chunks/s of fp32 ONNX Runtime and of ``embedding.quantize: precision``, alternated."""
    from indexer.embedder_onnx import OnnxEmbedder

    results: dict[str, Any] = {}
    for count in threads:
        pair = {
            name: OnnxEmbedder(caches=caches, batch_size=batch_size, threads=count, quantize=quantize)
            for name, quantize in (("fp32", "none"), (precision, cast("Literal['int8', 'bf16']", precision)))
        }
        for each in pair.values():
            each.embed_documents(texts[:64])  # load, compile and warm
        rates: dict[str, list[float]] = {name: [] for name in pair}
        for _ in range(repeat):
            for name, each in pair.items():
                start = time.perf_counter()
                each.embed_documents(texts)
                rates[name].append(len(texts) / (time.perf_counter() - start))
        fp32, other = max(rates["fp32"]), max(rates[precision])
        backend = pair[precision].backend
        print(
            f"{count} thread(s), batch {batch_size}: fp32 {fp32:6.1f} chunks/s ({fp32 / count:6.1f}/core)   "
            f"{precision} [{backend}] {other:6.1f} chunks/s ({other / count:6.1f}/core)   ratio {other / fp32:.2f}"
        )
        results[str(count)] = {"fp32": fp32, precision: other, "ratio": other / fp32, "backend": backend}
    record("indexing-precision", {"chunks": len(texts), "batch_size": batch_size, "precision": precision, **results})


if __name__ == "__main__":
    main()
