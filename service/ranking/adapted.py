"""``rerank.kind: adapted``: each store's own cross-encoder (``docqa adapt``) on top of the offline reranker.

The offline reranker orders the readable candidates first (milliseconds); the store's model then scores the
best ``depth`` of them and they are put in the order of a blend of the two scores, each standardised over
those candidates: ``blend * z(model) + (1 - blend) * z(offline)``. ``adapt`` chose ``blend`` and ``depth`` on
the store's held-out pseudo-queries; the rest keep the offline order below them.

A store without a model, or whose model folder is refused (another format, another store's, a checksum that
does not match, a graph ONNX Runtime cannot run: ``adapted_model.verify``), is ranked by the offline reranker
and the answer carries a warning; the reason goes to the server log, never to the caller (it names paths).
The folder is looked at on every query (one ``stat``), so a model ``docqa adapt`` installs is used from the
next query on, without a restart; it is verified once per installation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.index import SearchHit
from indexer.index.port import Vector
from service.ranking.adapted_model import MANIFEST_FILE, AdaptedModel, AdaptedModelError, model_folder
from service.ranking.errors import RerankerUnavailable
from service.ranking.features import CHARS_PER_TOKEN, passage
from service.ranking.port import Reranked, Reranker

log = logging.getLogger("docqa.rerank")

#: What the caller reads when its store's model cannot be used (the reason is in the server log).
NO_MODEL = "adapted reranker unavailable for this store; sources are ranked by the offline reranker"


def standardised(values: np.ndarray) -> np.ndarray:
    """(x - mean) / std over the candidates; all zeros when they are all equal."""
    std = float(values.std())
    return (values - values.mean()) / std if std > 1e-12 else np.zeros_like(values)


def blended_order(
    hits: Sequence[SearchHit], offline: Sequence[Reranked], model_scores: np.ndarray, blend: float
) -> list[Reranked]:
    """The first ``len(model_scores)`` of ``offline`` in the blended order, then the rest in offline order."""
    depth = len(model_scores)
    top = offline[:depth]
    base = np.array([r.score for r in top], dtype=np.float64)
    mixed = blend * standardised(model_scores) + (1.0 - blend) * standardised(base)
    order = sorted(range(depth), key=lambda i: (-mixed[i], i))
    head = [Reranked(top[i].hit, float(mixed[i])) for i in order]
    floor = float(mixed.min()) if depth else 0.0
    tail = [Reranked(r.hit, floor - 1.0 - i) for i, r in enumerate(offline[depth:])]
    return head + tail


class _StoreModel(Reranker):
    """One store's model over the offline reranker's order."""

    def __init__(self, offline: Reranker, model: AdaptedModel) -> None:
        self._offline = offline
        self._model = model
        self._max_chars = model.manifest.max_tokens * CHARS_PER_TOKEN
        self.name = f"adapted:{model.manifest.store_id}"

    def for_model(self, embedding_model: str) -> Reranker:
        offline = self._offline.for_model(embedding_model)
        return self if offline is self._offline else _StoreModel(offline, self._model)

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        offline = self._offline.rerank(question, question_vector, hits)
        depth = min(self._model.manifest.depth, len(offline))
        if depth < 2 or self._model.manifest.blend <= 0.0:
            return offline
        try:
            scores = self._model.scorer.score(
                question, [passage(r.hit.chunk, self._max_chars) for r in offline[:depth]]
            )
        except Exception as exc:  # a model failing at run time must not fail the query
            raise RerankerUnavailable(
                f"reranker unavailable: the adapted model failed ({type(exc).__name__})"
            ) from None
        if scores.shape != (depth,) or not np.isfinite(scores).all():
            raise RerankerUnavailable("reranker unavailable: the adapted model returned no score for some candidates")
        return blended_order(hits, offline, scores, self._model.manifest.blend)


class _Fallback(Reranker):
    """The offline reranker, with the warning that the store's own model could not be used."""

    def __init__(self, offline: Reranker) -> None:
        self._offline = offline
        self.name = offline.name
        self.notice = NO_MODEL

    def for_model(self, embedding_model: str) -> Reranker:
        offline = self._offline.for_model(embedding_model)
        return self if offline is self._offline else _Fallback(offline)

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        return self._offline.rerank(question, question_vector, hits)


class AdaptedReranker(Reranker):
    """Routes each store to its own model (``for_store``); the offline reranker where there is none."""

    name = "adapted"

    def __init__(self, offline: Reranker, data_dir: Path, *, threads: int | None = None) -> None:
        self._offline = offline
        self._data_dir = Path(data_dir)
        self._threads = threads
        self._lock = threading.Lock()
        #: store → (the manifest's (mtime_ns, size, inode), the loaded model or None when refused).
        self._models: dict[str, tuple[tuple[int, int, int] | None, AdaptedModel | None]] = {}

    def model(self, store_id: str) -> AdaptedModel | None:
        """The store's verified model (None: none, or refused; the reason logged once per installation)."""
        folder = model_folder(self._data_dir, store_id)
        try:
            st = (folder / MANIFEST_FILE).stat()
            signature: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            signature = None
        with self._lock:
            cached = self._models.get(store_id)
            if cached is not None and cached[0] == signature:
                return cached[1]
            model: AdaptedModel | None = None
            try:
                model = AdaptedModel.load(folder, store_id, threads=self._threads)
                log.info("store %s: adapted reranker loaded from %s", store_id, folder)
            except AdaptedModelError as exc:
                log.warning("store %s: %s; ranking by the offline reranker", store_id, exc.message)
            self._models[store_id] = (signature, model)
            return model

    def for_store(self, store_id: str) -> Reranker:
        model = self.model(store_id)
        return _Fallback(self._offline) if model is None else _StoreModel(self._offline, model)

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        # Without a store there is no store model to use: the offline order (for_store is the way in).
        return self._offline.rerank(question, question_vector, hits)

    def close(self) -> None:
        self._offline.close()
