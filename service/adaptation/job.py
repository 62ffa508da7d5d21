"""One ``docqa adapt`` run on one store: read, mine, train, export, evaluate, install when it wins.

One run per store at a time (an exclusive lock on ``<data_dir>/adapted/<store>/lock``; a second is refused
with the holder's pid). Work is kept in ``<data_dir>/adapted/<store>/work``: the dataset and the training
checkpoints, so a killed run started again with the same options over the same documents goes on from the
last checkpoint; ``restart`` throws them away. The work folder is removed when a run ends, installed or not.

The new model is installed only when its MRR on the second half of the held-out pseudo-queries (and, given a
question file, on those questions through the query engine) beats the current ranking's; otherwise the
current one stays and the result says by how much the new one lost.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from acl.checker import AccessChecker
from acl.errors import InvalidArgument, NotFound
from indexer.embedder import resolve_model_path
from service.adaptation import dataset as ds
from service.adaptation import evaluation as ev
from service.adaptation.export import export_fp32, quantize_int8
from service.adaptation.lock import store_lock
from service.adaptation.options import AdaptOptions
from service.adaptation.training import TrainingPlan, encoder_layers, train
from service.query.guarded import TrainingReads
from service.ranking.adapted_model import (
    MANIFEST_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    AdaptedModel,
    AdaptedModelError,
    Manifest,
    PairScorer,
    install,
    model_folder,
    sha256,
    store_folder,
)
from service.ranking.offline import OfflineReranker
from service.ranking.port import Reranker

log = logging.getLogger("docqa.adapt")

#: int8 is installed when its held-out MRR is at most this much below fp32's.
INT8_TOLERANCE = 0.01
#: The new model must beat the current ranking's MRR by more than this to be installed.
MARGIN = 1e-3


@dataclass
class AdaptResult:
    store_id: str
    installed: bool
    message: str
    scope: str
    documents: int = 0
    chunks: int = 0
    training_queries: int = 0
    held_out: int = 0
    precision: str = ""
    blend: float = 0.0
    model_bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    current: dict[str, Any] = field(default_factory=dict)
    new: dict[str, Any] = field(default_factory=dict)
    questions: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: (phase, done, total): "reading", "mining", "training", "exporting", "evaluating", "installing".
Progress = Callable[[str, int, int], None]


def adapt(
    app: Any,
    store_id: str,
    options: AdaptOptions,
    *,
    on_progress: Progress = lambda phase, done, total: None,
    evaluate_questions: Callable[[Reranker, Reranker], tuple[dict[str, Any], dict[str, Any]]] | None = None,
) -> AdaptResult:
    """Run one adaptation of ``store_id``; see the module docstring. ``evaluate_questions(current, new)`` runs a
    question file through the engine with each reranker and returns their summaries (MRR under "mrr")."""
    options.check()
    store = app.repository.get_store(store_id)
    if store is None:
        raise NotFound(f"store {store_id!r} not found")
    data_dir = Path(app.settings.data_dir)
    with store_lock(data_dir, store_id):
        return _run(app, store, options, data_dir, on_progress, evaluate_questions)


def _run(
    app: Any, store: Any, options: AdaptOptions, data_dir: Path, on_progress: Progress, evaluate_questions: Any
) -> AdaptResult:
    clock: dict[str, float] = {}
    started = time.monotonic()
    base = Path(resolve_model_path(options.base_model))
    if not (base / "config.json").is_file() or not (base / "tokenizer.json").is_file():
        raise InvalidArgument(
            f"adapt: base model {options.base_model!r} is not a local model folder with a tokenizer.json"
        )
    layers = min(options.layers, encoder_layers(base))
    reads = TrainingReads(
        index=app.index,
        checker=AccessChecker(app.repository),
        catalog=app.repository,
        access=app.repository,
        store_id=store.id,
        principals=options.principals,
        everything=options.everything,
    )
    if options.everything:
        log.warning(
            "store %s: adapt learns from every document whatever its ACL: the model may rank with what "
            "some of its callers may not read (README, Adapted reranker)",
            store.id,
        )
    work = store_folder(data_dir, store.id) / "work"
    if options.restart and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    in_scope = set(reads.documents())
    contents = [(d.id, d.content_hash) for d in app.repository.list_documents(store.id) if d.id in in_scope]
    if not contents:
        raise InvalidArgument(
            f"store {store.id!r} has no documents {reads.scope} to learn from"
            + ("" if options.everything else " (name a group whose documents to learn from with --principal)")
        )
    fp = ds.fingerprint(options.shaping(), contents)
    data_file = work / "dataset.json"
    data = ds.Dataset.load(data_file)
    if data is None or data.fingerprint != fp:
        shutil.rmtree(work)
        work.mkdir(parents=True)
        try:
            data = ds.build(
                reads,
                lambda: app.embedder(store.embedding_model),
                fingerprint_=fp,
                max_queries=options.max_queries,
                negatives=options.negatives,
                max_tokens=options.max_tokens,
                seed=options.seed,
                on_progress=on_progress,
            )
        except ds.NotEnoughText as exc:
            raise InvalidArgument(f"store {store.id!r}: {exc}") from None
        data.save(data_file)
    else:
        log.info("store %s: reusing the dataset of an earlier run (%d queries)", store.id, len(data.train))
    clock["dataset"] = time.monotonic() - started

    mark = time.monotonic()
    plan = TrainingPlan(
        base_model=base,
        layers=layers,
        max_tokens=options.max_tokens,
        groups=options.groups,
        epochs=options.epochs,
        learning_rate=options.learning_rate,
        seed=options.seed,
        checkpoint_every=options.checkpoint_every,
        device=options.device,
    )
    model = train(data.train, plan, work, fingerprint=fp, on_step=lambda d, t, loss: on_progress("training", d, t))
    clock["training"] = time.monotonic() - mark

    mark = time.monotonic()
    on_progress("exporting", 0, 2)
    fp32, int8 = work / "fp32.onnx", work / "int8.onnx"
    export_fp32(model, base / "tokenizer.json", options.max_tokens, fp32)
    on_progress("exporting", 1, 2)
    quantize_int8(fp32, int8)
    on_progress("exporting", 2, 2)
    clock["export"] = time.monotonic() - mark

    mark = time.monotonic()
    offline = OfflineReranker(app.embedder, model=store.embedding_model)
    cases = ev.cases(
        reads,
        app.embedder(store.embedding_model),
        offline,
        data.held_out,
        fusion=store.fusion,
        lexical_weight=store.lexical_weight,
        candidates=options.candidates,
        on_progress=lambda d, t: on_progress("evaluating", d, t),
    )
    tune, test = cases[0::2], cases[1::2]
    current_model = _current(data_dir, store.id)
    if current_model is None:
        current = ev.ranks_with(test, None, 0.0)
    else:
        m = current_model.manifest
        current = ev.ranks_with(test, ev.model_orders(current_model.scorer, test, m.depth, m.max_tokens), m.blend)
    scored: dict[str, tuple[float, ev.Ranks, PairScorer]] = {}
    for name, path in (("fp32", fp32), ("int8", int8)):
        scorer = PairScorer(path, base / "tokenizer.json", options.max_tokens)
        blend, _ = ev.choose_blend(tune, ev.model_orders(scorer, tune, options.depth, options.max_tokens))
        ranks = ev.ranks_with(test, ev.model_orders(scorer, test, options.depth, options.max_tokens), blend)
        scored[name] = (blend, ranks, scorer)
    precision = "int8" if scored["int8"][1].mrr >= scored["fp32"][1].mrr - INT8_TOLERANCE else "fp32"
    blend, new, _ = scored[precision]
    chosen = int8 if precision == "int8" else fp32
    clock["evaluation"] = time.monotonic() - mark

    result = AdaptResult(
        store_id=store.id,
        installed=False,
        message="",
        scope=data.scope,
        documents=data.documents,
        chunks=data.chunks,
        training_queries=len(data.train),
        held_out=len(test),
        precision=precision,
        blend=blend,
        model_bytes=chosen.stat().st_size,
        seconds=clock,
        current={"ranking": "adapted model" if current_model else "offline reranker", **current.as_dict()},
        new=new.as_dict(),
    )
    folder = work / "model.new"
    _write_folder(folder, chosen, base, store.id, options, layers, blend, result)
    wins = new.mrr > current.mrr + MARGIN
    if evaluate_questions is not None:
        from service.ranking.adapted import _StoreModel

        candidate = _StoreModel(offline, AdaptedModel.load(folder, store.id))
        current_ranker = offline if current_model is None else _StoreModel(offline, current_model)
        before, after = evaluate_questions(current_ranker, candidate)
        result.questions = {"current": before, "new": after}
        wins = after["mrr"] > before["mrr"] + MARGIN
        basis = f"question file MRR {after['mrr']:.3f} against {before['mrr']:.3f}"
    else:
        basis = f"held-out MRR {new.mrr:.3f} against {current.mrr:.3f} ({new.queries} pseudo-queries)"
    on_progress("installing", 0, 1)
    if wins or options.force:
        install(folder, data_dir, store.id)
        result.installed = True
        result.message = f"installed the adapted reranker for store {store.id!r}: {basis}" + (
            "" if wins else " (forced)"
        )
    else:
        lost = (after["mrr"] - before["mrr"]) if evaluate_questions is not None else new.mrr - current.mrr
        result.message = (
            f"kept the current ranking ({result.current['ranking']}) of store {store.id!r}: the new model did not "
            f"beat it ({basis}, {lost:+.3f})"
        )
    on_progress("installing", 1, 1)
    shutil.rmtree(work, ignore_errors=True)
    result.seconds["total"] = time.monotonic() - started
    log.info("%s", result.message)
    return result


def _current(data_dir: Path, store_id: str) -> AdaptedModel | None:
    try:
        return AdaptedModel.load(model_folder(data_dir, store_id), store_id)
    except AdaptedModelError:
        return None


def _write_folder(
    folder: Path,
    model: Path,
    base: Path,
    store_id: str,
    options: AdaptOptions,
    layers: int,
    blend: float,
    result: AdaptResult,
) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    shutil.copyfile(model, folder / MODEL_FILE)
    shutil.copyfile(base / "tokenizer.json", folder / TOKENIZER_FILE)
    manifest = Manifest(
        store_id=store_id,
        base_model=options.base_model,
        layers=layers,
        max_tokens=options.max_tokens,
        blend=blend,
        depth=options.depth,
        scope=result.scope,
        trained_at=datetime.now(UTC).isoformat(timespec="seconds"),
        model_sha256=sha256(folder / MODEL_FILE),
        model_bytes=(folder / MODEL_FILE).stat().st_size,
        tokenizer_sha256=sha256(folder / TOKENIZER_FILE),
        metrics={
            "precision": result.precision,
            "held_out": result.new,
            "current": result.current,
            "training_queries": result.training_queries,
        },
    )
    (folder / MANIFEST_FILE).write_text(manifest.to_json(), encoding="utf-8")
