"""The local adapter of the reranker port: a sentence-transformers ``CrossEncoder`` from a model folder.

``sentence_transformers`` (and torch) take seconds to import, so they are
imported in the constructor, which only runs when ``rerank.kind`` is
``cross_encoder``. Nothing is downloaded: the folder must hold the model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from acl.errors import ConfigurationError
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.ranking.errors import RerankerUnavailable
from service.ranking.features import CHARS_PER_TOKEN, passage
from service.ranking.port import Reranked, Reranker, ranked

KEY = "rerank.model_path"


class CrossEncoderReranker(Reranker):
    """Scores each (question, "title › headings\\ntext") pair with a local cross-encoder, on the CPU by default."""

    def __init__(
        self,
        model_path: Path | str,
        *,
        max_tokens: int = 512,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise ConfigurationError(f"{KEY}: {path} is not a folder")
        if not (path / "config.json").is_file():
            raise ConfigurationError(f"{KEY}: {path} holds no model (no config.json)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        from sentence_transformers import CrossEncoder

        try:
            self._model: Any = CrossEncoder(
                str(path), device=device or "cpu", max_length=max_tokens, local_files_only=True
            )
        except Exception as exc:  # whatever transformers raises for a folder it cannot read
            raise ConfigurationError(f"{KEY}: cannot load a CrossEncoder from {path} ({type(exc).__name__})") from None
        if self._model.num_labels != 1:
            raise ConfigurationError(
                f"{KEY}: the model at {path} has {self._model.num_labels} labels; a reranker needs one score"
            )
        self.name = f"cross_encoder:{path.name}"
        self._max_chars = max_tokens * CHARS_PER_TOKEN
        self._batch_size = batch_size
        self._lock = threading.Lock()  # one forward pass at a time: torch already uses every core

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        if not hits:
            return []
        pairs = [(question, passage(h.chunk, self._max_chars)) for h in hits]
        try:
            with self._lock:
                scores = self._model.predict(
                    pairs, batch_size=self._batch_size, show_progress_bar=False, convert_to_numpy=True
                )
            values = np.asarray(scores, dtype=np.float64).reshape(-1)
        except Exception as exc:  # a model failing at run time must not fail the query
            raise RerankerUnavailable(
                f"reranker unavailable: the cross-encoder failed ({type(exc).__name__})"
            ) from None
        if values.shape != (len(hits),) or not np.isfinite(values).all():
            raise RerankerUnavailable("reranker unavailable: the cross-encoder returned no score for some candidates")
        return ranked(hits, [float(v) for v in values])
