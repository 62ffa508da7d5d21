"""Answer quality on a real corpus: dense, lexical, hybrid and hybrid + rerank side by side, in one run.

    apt-get install postgresql-doc-15
    python bench/quality.py [--questions bench/quality/postgresql-15.yaml] [--data-dir DIR] [--no-calibrate]
    apt-get install git-doc debian-history maint-guide debian-policy
    python bench/quality.py --questions bench/quality/debian-git.yaml --against origin/main

The corpus is the folder the question file names (``root``) or the files its
``sources`` list, copied into the data directory with an ACL manifest that
lets ``group:everyone`` read it, and indexed with ``docqa index`` once (a
re-run skips unchanged files; the first run embeds ~12k chunks, 10-50
minutes on 2 cores). Then, in-process, every
question runs through the query engine as ``docqa eval`` runs it
(``service.quality.evaluation``) with each retrieval mode in turn — the
store's ``fusion`` setting (dense, lexical, rrf, weighted) without a
reranker, and the default fusion with each reranker — and the table shows
hit@1, hit@5, MRR, hit@3 of the questions that name an exact identifier
("id hit@3", ``identifier: true``), the share of answerable questions answered and of
unanswerable ones refused at the store's level (near the domain and off it),
key-term presence and passage recall in the (extractive) answer, answers with
extraction debris, and retrieval p50/p95 (question embedding included, no
LLM). Ratios compare each mode with dense in the same run. Finally the store
is calibrated (``docqa settings calibrate``) and the default mode runs again
at the calibrated scale.

``--against REF`` also runs ``docqa eval`` of another commit (a checkout of
REF made with ``git archive``, the question file's newer keys left out) on the
same store and scores its answers the same way: today's answerer beside
yours, in one run. Figures, not asserts; JSON under bench/results/.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.provenance import record  # noqa: E402
from indexer.index import acl_filter  # noqa: E402
from service.bootstrap import App, build_app  # noqa: E402
from service.config import load_settings  # noqa: E402
from service.domain.queries import Caller  # noqa: E402
from service.quality.evaluation import EvalReport, QuestionResult, evaluate, has_debris, judge, summarize  # noqa: E402
from service.quality.questions import QuestionSet, load_questions  # noqa: E402
from service.query.calibration import Calibrator  # noqa: E402

STORE = "quality"
USER = "reader"
MANIFEST = 'documents:\n  - match: "**"\n    allow: [group:everyone]\n'
#: (label, store fusion, reranker kind); None = the store's / configuration's default.
MODES: list[tuple[str, str | None, str]] = [
    ("dense", "dense", "none"),
    ("lexical (BM25)", "lexical", "none"),
    ("hybrid rrf", "rrf", "none"),
    ("hybrid weighted", "weighted", "none"),
    ("hybrid + rerank (default)", None, "offline"),
    ("hybrid + adapted reranker", None, "adapted"),
]
#: The mode a store runs by default (calibrated again at the end).
DEFAULT_MODE = MODES[4]


def prepare(questions: QuestionSet, corpus: Path | None, data_dir: Path) -> Path:
    folder = data_dir / "corpus"
    if folder.exists():
        return folder
    if questions.sources and corpus is None:
        building = data_dir / "corpus.partial"
        shutil.rmtree(building, ignore_errors=True)
        for source in questions.sources:
            copy_source(Path(source.origin), source.include, source.to, building, questions.corpus)
        (building / "acl.yaml").write_text(MANIFEST)
        building.rename(folder)
        return folder
    root = corpus or Path(questions.root)
    if not root.is_dir():
        sys.exit(f"corpus folder {root} not found (apt-get install {questions.corpus or 'the corpus package'})")
    shutil.copytree(root, folder)
    (folder / "acl.yaml").write_text(MANIFEST)
    return folder


def copy_source(origin: Path, include: str, to: str, folder: Path, corpus: str) -> None:
    """One ``sources`` entry into the corpus folder: a folder's files matching ``include``, or one file (``.gz``
    unpacked) at ``to``."""
    if not origin.exists():
        sys.exit(f"{origin} not found (see the question file {corpus!r} for the packages to install)")
    if origin.is_file():
        target = folder / (to or origin.name.removesuffix(".gz"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(origin.read_bytes()) if origin.suffix == ".gz" else origin.read_bytes())
        return
    for path in sorted(origin.glob(include)):
        if path.is_file() and not path.is_symlink():
            target = folder / to / path.relative_to(origin)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def baseline(ref: str, questions: QuestionSet, data_dir: Path, store: str) -> EvalReport:
    """``docqa eval`` of commit ``ref`` on the same store, its answers scored as this checkout scores them."""
    with tempfile.TemporaryDirectory(prefix="docqa-baseline-") as tmp:
        checkout = Path(tmp) / "src"
        checkout.mkdir()
        archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, stdout=subprocess.PIPE).stdout
        subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
        plain = Path(tmp) / "questions.yaml"
        spec = yaml.safe_load(Path(questions.path).read_text(encoding="utf-8"))
        old_keys = ("id", "question", "documents", "terms", "unanswerable")
        spec = {
            "corpus": spec.get("corpus", ""),
            "questions": [{k: q[k] for k in old_keys if k in q} for q in spec["questions"]],
        }
        plain.write_text(yaml.safe_dump(spec, allow_unicode=True, sort_keys=False), encoding="utf-8")
        out = Path(tmp) / "report.json"
        command = [sys.executable, "-m", "service.api.cli", "--data-dir", str(data_dir / "data")]
        command += ["eval", str(plain), "--store", store, "--as", USER, "--json", str(out), "--quiet"]
        env = {k: v for k, v in os.environ.items() if k not in ("DOCQA_CONFIG", "PYTHONPATH")}
        done = subprocess.run(command, cwd=checkout, env=env, check=False, stdout=subprocess.DEVNULL)
        if done.returncode != 0:
            sys.exit(f"docqa eval of {ref} failed ({done.returncode})")
        raw = json.loads(out.read_text(encoding="utf-8"))
    by_id = {q.id: q for q in questions.questions}
    results: list[QuestionResult] = []
    for item in raw["results"]:
        question = by_id[item["id"]]
        answer = item["answer"] if item["answered"] else None
        term_found, passage_found = judge(question, answer)
        results.append(
            QuestionResult(
                id=item["id"],
                line=question.line,
                question=item["question"],
                unanswerable=question.unanswerable,
                expected=question.documents,
                ranked=tuple(item["ranked"]),
                rank=item["rank"],
                answered=item["answered"],
                answer=item["answer"],
                term_found=term_found,
                top_score=item["top_score"],
                retrieval_ms=item["retrieval_ms"],
                warnings=tuple(item.get("warnings", ())),
                passage_found=passage_found,
                near=question.near,
                debris=has_debris(item["answer"] or ""),
                identifier=question.identifier,
            )
        )
    return EvalReport(store, questions.path, None, summarize(results), tuple(results))


def index(folder: Path, data_dir: Path, store: str) -> None:
    command = [sys.executable, "-m", "service.api.cli", "--data-dir", str(data_dir / "data")]
    command += ["index", str(folder), "--store", store, "--progress-every", "60"]
    env = dict(os.environ)
    env.pop("DOCQA_CONFIG", None)
    started = time.perf_counter()
    done = subprocess.run(command, text=True, env=env, cwd=ROOT, check=False, stdout=subprocess.PIPE)
    if done.returncode != 0:
        sys.exit(f"docqa index failed ({done.returncode})")
    print(f"{done.stdout.strip().splitlines()[-1]} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def variant(app: App, rerank: str) -> App:
    """The same adapters (database, index, embedding model) with another reranker."""
    settings = app.settings.model_copy(update={"rerank": app.settings.rerank.model_copy(update={"kind": rerank})})
    return dataclasses.replace(
        app, settings=settings, _engine=None, _embedders=app._embedders, _reranker=None, _reranker_ready=False
    )


def adapted_model(app: App, store: str) -> None:
    """Train and install the store's adapted reranker with the defaults (forced: the table shows it either way)."""
    from service.adaptation.job import adapt
    from service.adaptation.options import AdaptOptions

    result = adapt(
        app,
        store,
        AdaptOptions(force=True),
        on_progress=lambda phase, done, total: (
            print(f"adapt: {phase} {done}/{total}", file=sys.stderr) if done in (1, total) or done % 50 == 0 else None
        ),
    )
    print(json.dumps(result.to_dict()), file=sys.stderr)
    print(
        f"adapted model: {result.training_queries} pseudo-queries, {result.precision} "
        f"{result.model_bytes / 1e6:.1f} MB, "
        f"blend {result.blend:.2f}, training {result.seconds.get('training', 0):.0f} s, "
        f"total {result.seconds.get('total', 0):.0f} s; held-out MRR current {result.current['mrr']:.3f} "
        f"new {result.new['mrr']:.3f}",
        file=sys.stderr,
    )


def transplant(source: Path, target: Path, store: str) -> None:
    """Copy another data directory's adapted model of ``store`` here (the bench's cross-corpus run)."""
    from service.ranking.adapted_model import model_folder

    there, here = model_folder(source, store), model_folder(target, store)
    if not there.is_dir():
        sys.exit(f"no adapted model in {there}")
    shutil.rmtree(here, ignore_errors=True)
    here.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(there, here)
    print(f"adapted model from {there}", file=sys.stderr)


def rerank_cost(app: App, store: str, questions: QuestionSet, candidates: int = 30) -> dict[str, float]:
    """p50 ms of the offline and of the adapted reranker on ``candidates`` fused candidates, in one run."""
    from service.query.fusion import fuse

    reads = app.index
    principals = acl_filter(frozenset({"group:everyone"}))
    embedder = app.embedder(app.repository.get_store(store).embedding_model)  # type: ignore[union-attr]
    rerankers = {kind: variant(app, kind).reranker for kind in ("offline", "adapted")}
    times: dict[str, list[float]] = {kind: [] for kind in rerankers}
    for q in questions.questions[:60]:
        vector = embedder.embed_query(q.question)
        hits = fuse(
            "rrf",
            reads.knn(store, vector, candidates, principals),
            reads.lexical(store, q.question, candidates, principals),
            vector,
            0.3,
        )[:candidates]
        for kind, reranker in rerankers.items():
            assert reranker is not None
            one = reranker.for_store(store)
            started = time.perf_counter()
            one.rerank(q.question, vector, hits)
            times[kind].append((time.perf_counter() - started) * 1000)
    return {kind: sorted(values)[len(values) // 2] for kind, values in times.items()}


def run_mode(app: App, store: str, questions: QuestionSet, fusion: str | None, rerank: str) -> EvalReport:
    default = app.settings.store_defaults.fusion
    app.repository.update_store(store, fusion=fusion or default)
    engine_app = variant(app, rerank)
    return evaluate(engine_app.engine, app.repository, Caller(USER), store, questions)


def row(label: str, report: EvalReport, base: EvalReport) -> str:
    s, b = report.summary, base.summary
    ratio = f"{s.hit_at_1 / b.hit_at_1:.2f}×" if b.hit_at_1 else "n/a"

    def share(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    return (
        f"| {label} | {s.hit_at_1:.3f} | {s.hit_at_5:.3f} | {s.mrr:.3f} | {share(s.identifier_hit_at_3)} | {ratio} | "
        f"{s.answered:.2f} | "
        f"{share(s.refused_near)} | {share(s.refused_off)} | {share(s.terms)} | {share(s.passages)} | {s.debris} | "
        f"{s.retrieval_p50_ms:.1f} | {s.retrieval_p95_ms:.1f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", default=str(ROOT / "bench" / "quality" / "postgresql-15.yaml"))
    parser.add_argument("--corpus", type=Path, help="corpus folder (default: the question file's root)")
    parser.add_argument("--data-dir", type=Path, default=Path.home() / ".cache" / "docqa-bench" / "quality")
    parser.add_argument("--modes", help="comma-separated labels to run (default: all)")
    parser.add_argument("--no-calibrate", action="store_true", help="skip the calibrated run")
    parser.add_argument("--store", default=STORE, help=f"store id in the data directory (default {STORE})")
    parser.add_argument("--no-index", action="store_true", help="use the store as it is (already indexed)")
    parser.add_argument(
        "--lexicon-in-memory", action="store_true", help="BM25 from the in-memory copy, as docqa serve ranks it"
    )
    parser.add_argument("--against", metavar="REF", help="also run docqa eval of commit REF on the same store")
    parser.add_argument(
        "--adapt",
        action="store_true",
        help="train the store's adapted reranker first (docqa adapt, installed even when it loses, to measure it)",
    )
    parser.add_argument(
        "--adapted-from",
        type=Path,
        metavar="DIR",
        help="use the adapted model trained in another bench data directory (trained on one corpus, tested here)",
    )
    args = parser.parse_args()

    questions = load_questions(args.questions)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if not args.no_index:
        index(prepare(questions, args.corpus, args.data_dir), args.data_dir, args.store)
    app = build_app(load_settings(None, data_dir=args.data_dir / "data"))
    store = app.repository.get_store(args.store)
    assert store is not None
    if args.lexicon_in_memory:
        app.keep_lexicons()
        app.index.lexical(args.store, "warm up", 1, acl_filter(frozenset({"group:everyone"})))
        while not getattr(app.index.stats(args.store), "lexicon_reads", 0):  # type: ignore[attr-defined]
            time.sleep(0.1)
    original = {"fusion": store.fusion, "min_threshold": store.min_threshold, "max_threshold": store.max_threshold}
    counts = app.index.count(args.store)
    print(
        f"{questions.path}: {len(questions.questions)} questions; store {args.store}: {counts} chunks", file=sys.stderr
    )

    if args.adapt:
        adapted_model(app, args.store)
    if args.adapted_from:
        transplant(args.adapted_from / "data", app.settings.data_dir, args.store)
    wanted = set(args.modes.split(",")) if args.modes else None
    reports: dict[str, EvalReport] = {}
    try:
        for label, fusion, rerank in MODES:
            if wanted and label not in wanted:
                continue
            reports[label] = run_mode(app, args.store, questions, fusion, rerank)
            print(f"{label}: done", file=sys.stderr)
        if args.against:
            reports[f"{args.against} (default, as committed there)"] = baseline(
                args.against, questions, args.data_dir, args.store
            )
            print(f"{args.against}: done", file=sys.stderr)
        if not args.no_calibrate:
            calibrator = Calibrator(
                stores=app.repository, catalog=app.repository, index=app.index, embedder_for=app.embedder
            )
            report = calibrator.run(args.store)
            scale = report.proposed
            print(
                f"calibrated: {report.current.minimum:.3f}–{report.current.maximum:.3f} → "
                f"{scale.minimum:.3f}–{scale.maximum:.3f}",
                file=sys.stderr,
            )
            app.repository.update_store(args.store, min_threshold=scale.minimum, max_threshold=scale.maximum)
            calibrated = f"{DEFAULT_MODE[0]}, calibrated {scale.minimum:.2f}–{scale.maximum:.2f}"
            reports[calibrated] = run_mode(app, args.store, questions, DEFAULT_MODE[1], DEFAULT_MODE[2])
    finally:
        app.repository.update_store(args.store, **original)

    if "hybrid + adapted reranker" in reports:
        cost = rerank_cost(app, args.store, questions)
        print(
            f"rerank p50 at 30 candidates: offline {cost['offline']:.1f} ms, adapted {cost['adapted']:.1f} ms "
            f"({cost['adapted'] / max(cost['offline'], 1e-9):.1f}×)"
        )
    base = reports.get("dense") or next(iter(reports.values()))
    print(
        f"\n{len(questions.questions)} questions ({base.summary.answerable} answerable, "
        f"{base.summary.unanswerable} unanswerable), {counts} chunks, level = store default"
    )
    print(
        "| mode | hit@1 | hit@5 | MRR | id hit@3 | hit@1 vs dense | answered | refused near | refused off | "
        "key term | passage | debris | p50 ms | p95 ms |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, each in reports.items():
        print(row(label, each, base))
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"quality-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({k: v.to_dict() for k, v in reports.items()}, indent=1))
    print(f"\nper-question reports: {path}", file=sys.stderr)
    summaries = {label: each.to_dict()["summary"] for label, each in reports.items()}
    record("quality", {"questions": questions.path, "chunks": counts, "report": str(path), **summaries})


if __name__ == "__main__":
    main()
