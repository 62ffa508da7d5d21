"""Embedder backends side by side on the same chunks: torch (sentence-transformers) vs ONNX Runtime.

    python bench/embedders.py [--chunks 200] [--queries 200] [--int8] [--pipeline-docs 20]
    python bench/embedders.py --pipeline-only [--pipeline-docs 80] [--pipeline-repeat 6] [--pipeline-generated]

Chunks come from the PostgreSQL manual's pages that the quality questions
(bench/quality/postgresql-15.yaml, ``apt-get install postgresql-doc-15``) cite,
chunked by DocQA's own chunker; without the manual, from examples/acme repeated.
Printed, each backend next to torch fp32 measured in the same run:

- chunks/s encoding those chunks (runs alternate so machine noise hits both);
- the whole indexing path (load, chunk, embed, write; ``index_folder`` into a fresh data directory) on
  ``--pipeline-docs`` HTML pages of the manual (else, or with ``--pipeline-generated``, bench/indexing.py's
  generated Markdown): torch in one thread (the issue's baseline), ONNX in one thread, and ONNX with files
  read and chunked in a thread two batches ahead of the encoder (``indexing.prefetch_batches``),
  ``--pipeline-repeat`` alternating runs each (``--pipeline-only``: this alone);
- cosine of each chunk's vector to torch's (mean/min) and, with the manual, an
  embedder-level hit@5: each question against those chunks, dense only;
- question-embedding latency p50/p99 over ``--queries`` short questions;
- a cold process's time to its first vector (``build_app(...).embedder().embed_query``; the ONNX export cached).

``--int8`` adds ``embedding.quantize: int8`` (ONNX Runtime's dynamic int8
quantisation of the same export, per channel, MatMul weights;
``indexer/onnx_quantize.py``), also on the whole indexing path. Figures, not asserts.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from provenance import record  # noqa: E402  (bench/provenance.py)

from indexer.chunker import Chunker  # noqa: E402
from indexer.embedder import Embedder, SentenceTransformerEmbedder  # noqa: E402
from indexer.embedder_onnx import OnnxEmbedder  # noqa: E402
from indexer.loaders import load_path  # noqa: E402
from indexer.onnx_model import shared_cache_dir  # noqa: E402
from service.quality.questions import EvalQuestion, load_questions  # noqa: E402

QUESTIONS = ROOT / "bench" / "quality" / "postgresql-15.yaml"
COLD = (
    "import sys, time; t = time.perf_counter(); from pathlib import Path; "
    "from service.bootstrap import build_app; from service.config import load_settings; "
    "e = build_app(load_settings(None, data_dir=Path(sys.argv[1]))).embedder(); "
    "e.embed_query('How many vacation days do I get?'); "
    "print(time.perf_counter() - t, 'torch' in sys.modules)"
)


def corpus(embedder: Embedder, limit: int) -> tuple[list[str], list[str], list[EvalQuestion]]:
    """Chunk texts, each chunk's document id, and the questions whose documents are all in."""
    chunker = Chunker(embedder.tokenizer, embedder.max_tokens)
    texts: list[str] = []
    docs: list[str] = []
    questions = load_questions(QUESTIONS) if QUESTIONS.exists() else None
    if questions is not None and Path(questions.root).is_dir():
        root = Path(questions.root)
        wanted: list[str] = []
        for question in questions.questions:
            wanted += [d for d in question.documents if d not in wanted]
        for doc in wanted:
            if len(texts) >= limit:
                break
            chunks = [c.text for c in chunker.chunk(load_path(root / doc))]
            texts += chunks
            docs += [doc] * len(chunks)
        kept = set(docs)
        return texts, docs, [q for q in questions.questions if q.documents and set(q.documents) <= kept]
    acme = [c.text for p in sorted((ROOT / "examples" / "acme").rglob("*.md")) for c in chunker.chunk(load_path(p))]
    while len(texts) < limit:
        texts += acme
    return texts[:limit], ["acme"] * limit, []


def rate(embedder: Embedder, texts: list[str]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    return len(texts) / (time.perf_counter() - start), vectors


def hit_at_5(embedder: Embedder, vectors: np.ndarray, docs: list[str], questions: list[EvalQuestion]) -> float:
    if not questions:
        return float("nan")
    hits = 0
    for question in questions:
        scores = vectors @ embedder.embed_query(question.question)
        top = {docs[i] for i in np.argsort(-scores)[:5]}
        hits += bool(top & set(question.documents))
    return hits / len(questions)


def latency(embedder: Embedder, questions: list[str]) -> tuple[float, float]:
    times = []
    for question in questions:
        start = time.perf_counter()
        embedder.embed_query(question)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), float(np.percentile(times, 99))


def cold(backend: str, data_dir: Path) -> tuple[float, float, bool]:
    env = {**os.environ, "DOCQA_EMBEDDING__BACKEND": backend, "PYTHONPATH": str(ROOT)}
    env.pop("DOCQA_CONFIG", None)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", COLD, str(data_dir)], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    )
    inside, torch_loaded = done.stdout.split()
    return time.perf_counter() - start, float(inside), torch_loaded == "True"


def pipeline_corpus(folder: Path, docs: int, generated: bool) -> str:
    """``docs`` pages of the PostgreSQL manual (HTML) copied into ``folder``, else (or if ``generated``)
    generated Markdown documents; says which."""
    manual = Path("/usr/share/doc/postgresql-doc-15/html")
    folder.mkdir()
    pages = sorted(manual.glob("*.html"))[100 : 100 + docs] if manual.is_dir() and not generated else []
    if not pages:
        from indexing import make_corpus

        make_corpus(folder, docs)
        return f"{docs} generated Markdown documents"
    (folder / "acl.yaml").write_text("documents:\n  - match: '**'\n    allow: [group:everyone]\n")
    for page in pages:
        (folder / page.name).write_bytes(page.read_bytes())
    return f"{len(pages)} HTML pages of the PostgreSQL manual"


def pipeline_rate(embedder: Embedder, folder: Path, data_dir: Path, prefetch_batches: int) -> tuple[float, int]:
    """Chunks/s of one ``index_folder`` of ``folder`` into a fresh data directory, and the chunks written."""
    from service.bootstrap import build_app
    from service.config import IndexingConfig, load_settings

    settings = load_settings(None, data_dir=data_dir)
    settings = settings.model_copy(update={"indexing": IndexingConfig(prefetch_batches=prefetch_batches)})
    app = build_app(settings, embedder_factory=lambda _name: embedder)
    ingestor = app.ingestor("bench")
    start = time.perf_counter()
    report = ingestor.index_folder(folder)
    elapsed = time.perf_counter() - start
    app.close()
    return report.chunks / elapsed, report.chunks


def whole_path(backends: dict[str, Embedder], folder: Path, work: Path, repeat: int) -> dict[str, list[float]]:
    """The whole indexing path, torch and ONNX one thread, ONNX with read-ahead; runs alternate, best of each."""
    runs = {
        "torch fp32, sequential": (backends["torch fp32"], 0),
        "onnx fp32, sequential": (backends["onnx fp32"], 0),
        "onnx fp32, read-ahead 2 batches": (backends["onnx fp32"], 2),
    }
    if "onnx int8" in backends:  # --int8: embedding.quantize int8, with the default read-ahead
        runs["onnx int8, read-ahead 2 batches"] = (backends["onnx int8"], 2)
    rates: dict[str, list[float]] = {name: [] for name in runs}
    chunks = set()
    for attempt in range(repeat):
        for i, (name, (embedder, prefetch)) in enumerate(runs.items()):
            speed, written = pipeline_rate(embedder, folder, work / f"p-{attempt}-{i}", prefetch)
            rates[name].append(speed)
            chunks.add(written)
    torch = rates["torch fp32, sequential"]
    sequential = rates["onnx fp32, sequential"]
    print(f"\n{chunks} chunks each run, {repeat} runs each (alternating), load {os.getloadavg()[0]:.1f}")
    print("| whole indexing path | chunks/s best / median | × torch, best / median of runs | × onnx one thread, same |")
    print("| --- | --- | --- | --- |")
    for name, got in rates.items():
        # Each run's ratio to the baseline runs next to it: the machine's load drifts less within one round.
        to_torch = statistics.median(g / t for g, t in zip(got, torch, strict=True))
        to_sequential = statistics.median(g / s for g, s in zip(got, sequential, strict=True))
        print(
            f"| {name} | {max(got):.1f} / {statistics.median(got):.1f} | {max(got) / max(torch):.2f} / "
            f"{to_torch:.2f} | {max(got) / max(sequential):.2f} / {to_sequential:.2f} |"
        )
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--int8", action="store_true")
    parser.add_argument("--pipeline-docs", type=int, default=20, help="0 skips the whole-path comparison")
    parser.add_argument("--pipeline-repeat", type=int, default=3)
    parser.add_argument("--pipeline-only", action="store_true", help="the whole-path comparison alone")
    parser.add_argument("--pipeline-generated", action="store_true", help="generated Markdown, not the manual's pages")
    args = parser.parse_args()
    shared = shared_cache_dir()
    with tempfile.TemporaryDirectory() as tmp:
        caches = [Path(tmp) / "data"] + ([shared] if shared else [])
        torch_e: Embedder = SentenceTransformerEmbedder()
        onnx_e = OnnxEmbedder(caches=caches)
        started = time.perf_counter()
        onnx_e.embed_query("warm up")
        print(f"ONNX model ready in {time.perf_counter() - started:.1f} s (export, or found in a cache)")
        backends: dict[str, Embedder] = {"torch fp32": torch_e, "onnx fp32": onnx_e}
        figures: dict[str, object] = {}
        if args.int8:
            int8 = OnnxEmbedder(caches=caches, quantize="int8")  # embedding.quantize: int8
            int8.embed_query("warm up")
            backends["onnx int8"] = int8
        for embedder in backends.values():
            embedder.embed_documents(["warm up: torch loads its model on the first call"])
        if args.pipeline_docs or args.pipeline_only:
            folder = Path(tmp) / "corpus"
            print(
                f"whole indexing path on {pipeline_corpus(folder, args.pipeline_docs or 20, args.pipeline_generated)}"
            )
            figures["whole_path_chunks_per_s"] = whole_path(backends, folder, Path(tmp), args.pipeline_repeat)
        if args.pipeline_only:
            record("embedders", figures)
            return
        texts, docs, questions = corpus(onnx_e, args.chunks)
        tokens = sum(len(onnx_e.tokenizer.token_spans(t)) for t in texts) / len(texts)
        print(
            f"{len(texts)} chunks (mean {tokens:.0f} tokens), {len(questions)} questions with their pages in, "
            f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
        )
        for embedder in backends.values():
            embedder.embed_documents(texts[:16])
        rates: dict[str, list[float]] = {name: [] for name in backends}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.repeat):
            for name, embedder in backends.items():
                speed, vectors[name] = rate(embedder, texts)
                rates[name].append(speed)
        base = max(rates["torch fp32"])
        print("\n| backend | chunks/s (best) | × torch | cosine to torch mean / min | hit@5 |")
        print("| --- | --- | --- | --- | --- |")
        for name, embedder in backends.items():
            cosines = (vectors[name] * vectors["torch fp32"]).sum(axis=1)
            hits = hit_at_5(embedder, vectors[name], docs, questions)
            print(
                f"| {name} | {max(rates[name]):.1f} | {max(rates[name]) / base:.2f} | "
                f"{cosines.mean():.4f} / {cosines.min():.4f} | {hits:.3f} |"
            )
            figures[name] = {"chunks_per_s": rates[name], "cosine_mean": float(cosines.mean()), "hit_at_5": hits}
        short = [q.question for q in questions] or ["How many vacation days do I get?"]
        asked = [short[i % len(short)] for i in range(args.queries)]
        print(f"\nquestion embedding, {len(asked)} questions: p50 / p99 ms")
        p50s = {name: latency(embedder, asked) for name, embedder in backends.items()}
        for name, (p50, p99) in p50s.items():
            print(f"  {name:11} {p50:6.2f} / {p99:6.2f}   × torch p50 {p50s['torch fp32'][0] / p50:.2f}")
        figures["question_p50_p99_ms"] = p50s
        print("\ncold process to its first vector (interpreter start included; in-process part; torch imported?)")
        for backend in ("torch", "onnx"):
            total, inside, loaded = cold(backend, Path(tmp) / f"cold-{backend}")
            print(f"  {backend:5} {total:5.2f} s ({inside:.2f} s in-process), torch imported: {loaded}")
            figures[f"cold_{backend}_s"] = total
        record("embedders", {"chunks": len(texts), "int8": args.int8, **figures})


if __name__ == "__main__":
    main()
