"""The offline reranker, the default: the store's own embedding model and plain text evidence, no extra model.

A candidate's score is a weighted sum of named features (``FEATURES``, each
computed in ``service.ranking.features``):

- ``dense``: the retrieval cosine of the chunk;
- ``heading``: the cosine of the question to the chunk's "title › headings"
  (distinct strings embedded in one batch, kept in a bounded LRU cache keyed
  by model and string, since titles repeat from query to query; at most
  ``new_headings`` strings not cached yet are embedded per query, those of the
  best candidates first, and a heading left for later counts as an average one);
- ``overlap``: the idf-weighted share of the question's words in the chunk's text;
- ``title_overlap``: the same in its title and headings;
- ``document``: its document's bonus for having several strong candidates;
- ``sentence``: the cosine of the question to the best of the chunk's two
  sentences sharing most words with it.

The default weights are measured (30 paraphrased questions over 120 pages of
the PostgreSQL 15 manual, 30 dense candidates each): dense alone hit@1 0.67,
hit@5 0.90, MRR 0.78; the defaults 0.73, 0.97, 0.83. ``heading`` and
``sentence`` are off by default: each lowered hit@1 there at every weight
tried (reference pages' headings are "Description", "Parameters", ...), and
they cost embeddings (``bench/rerank.py``) where the text features cost ~5 ms.
"""

from __future__ import annotations

import copy
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np

from indexer.embedder import Embedder
from indexer.index import SearchHit
from indexer.index.port import Vector
from service.ranking import features as f
from service.ranking.errors import RerankerUnavailable
from service.ranking.port import Reranked, Reranker, ranked

FEATURES = ("dense", "heading", "overlap", "title_overlap", "document", "sentence")


@dataclass(frozen=True, slots=True)
class OfflineWeights:
    """The weight of each feature in a candidate's score (0 turns a feature off; it is then not computed)."""

    dense: float = 1.0
    heading: float = 0.0
    overlap: float = 0.4
    title_overlap: float = 0.1
    document: float = 0.4
    sentence: float = 0.0

    def __post_init__(self) -> None:
        for name in FEATURES:
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"offline reranker weight {name} must be a finite number")


@dataclass(frozen=True, slots=True)
class Features:
    """Each feature's value per candidate, in the candidates' order (a feature not computed is all zeros)."""

    dense: f.Floats
    heading: f.Floats
    overlap: f.Floats
    title_overlap: f.Floats
    document: f.Floats
    sentence: f.Floats

    def score(self, weights: OfflineWeights) -> f.Floats:
        """The weighted sum per candidate."""
        total = np.zeros(len(self.dense))
        for name in FEATURES:
            weight = getattr(weights, name)
            if weight:
                total += weight * getattr(self, name)
        return total

    def as_dict(self) -> dict[str, list[float]]:
        return {field.name: [float(v) for v in getattr(self, field.name)] for field in fields(self)}


class VectorCache:
    """A bounded, thread-safe LRU of text vectors keyed by (model, text)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._vectors: OrderedDict[tuple[str, str], Vector] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._vectors)

    def cached(self, model: str, texts: Sequence[str]) -> dict[str, Vector]:
        """The cached vectors of those of ``texts`` that have one."""
        found: dict[str, Vector] = {}
        with self._lock:
            for text in texts:
                vector = self._vectors.get((model, text))
                if vector is not None:
                    self._vectors.move_to_end((model, text))
                    found[text] = vector
        return found

    def embed(self, embedder: Embedder, model: str, texts: Sequence[str]) -> dict[str, Vector]:
        """Embed the distinct ``texts`` in one batch and keep their vectors."""
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return {}
        fresh = dict(zip(distinct, embedder.embed_documents(distinct), strict=True))
        with self._lock:
            for text, vector in fresh.items():
                self._vectors[(model, text)] = vector
                self._vectors.move_to_end((model, text))
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
        return fresh

    def vectors(
        self, embedder: Embedder, model: str, texts: Sequence[str], new: int | None = None
    ) -> dict[str, Vector]:
        """The vectors of ``texts``: the cached ones, and at most ``new`` (None: all) others, the first ones."""
        found = self.cached(model, texts)
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        found.update(self.embed(embedder, model, missing if new is None else missing[:new]))
        return found


class OfflineReranker(Reranker):
    """Reranks with the store's embedding model and text evidence; needs no extra model.

    ``embedder`` is an ``Embedder`` or, like the query engine's, a function from
    a model name to its embedder; ``model`` is the model to use until
    ``for_model`` names the store's (default: the embedder's own).
    """

    def __init__(
        self,
        embedder: Embedder | Callable[[str], Embedder],
        *,
        model: str | None = None,
        weights: OfflineWeights | None = None,
        cache_size: int = 4096,
        new_headings: int = 8,
        sentences_per_chunk: int = 2,
        document_decay: float = 0.5,
    ) -> None:
        if isinstance(embedder, Embedder):
            fixed = embedder
            self._embedder_for: Callable[[str], Embedder] = lambda _model: fixed
            model = model or embedder.model_name
        else:
            self._embedder_for = embedder
        if not model:
            raise ValueError("OfflineReranker needs the embedding model's name with an embedder_for function")
        self.name = "offline"
        self.weights = weights or OfflineWeights()
        self.model = model
        self._cache = VectorCache(cache_size)
        self._new_headings = new_headings
        self._sentences = sentences_per_chunk
        self._decay = document_decay

    def for_model(self, embedding_model: str) -> OfflineReranker:
        if embedding_model == self.model:
            return self
        bound = copy.copy(self)  # shares the cache, which is keyed by model
        bound.model = embedding_model
        return bound

    def rerank(self, question: str, question_vector: Vector, hits: Sequence[SearchHit]) -> list[Reranked]:
        if len(hits) < 2:
            return ranked(hits, [float(v) for v in f.dense(hits)])
        scores = self.features(question, question_vector, hits).score(self.weights)
        return ranked(hits, [float(s) for s in scores])

    def features(
        self, question: str, question_vector: Vector, hits: Sequence[SearchHit], *, every: bool = False
    ) -> Features:
        """Each feature per candidate; those with weight 0 stay zeros unless ``every`` (for tuning weights)."""
        w = self.weights
        dense = f.dense(hits)
        zeros = np.zeros(len(hits))
        asked = f.terms(question)
        headings = [f.heading_text(h.chunk) for h in hits]
        text_terms = [f.terms(h.chunk.text) for h in hits]
        heading_terms = [f.terms(text) for text in headings]
        idf = f.idf(asked, [t | h for t, h in zip(text_terms, heading_terms, strict=True)])
        embedder: Embedder | None = None
        if every or w.heading or w.sentence:
            embedder = self._embedder_for(self.model)
            if embedder.dimension != len(question_vector):
                raise RerankerUnavailable(
                    f"reranker unavailable: the question vector has {len(question_vector)} dimensions, "
                    f"the embedding model {self.model!r} {embedder.dimension}"
                )
        heading = zeros
        if embedder is not None and (every or w.heading):
            heading = self._heading(embedder, question_vector, headings)
        sentence = zeros
        if embedder is not None and (every or w.sentence):
            sentence = self._sentence(embedder, asked, question_vector, hits)
        return Features(
            dense=dense,
            heading=heading,
            overlap=f.overlap(asked, idf, text_terms) if every or w.overlap else zeros,
            title_overlap=f.overlap(asked, idf, heading_terms) if every or w.title_overlap else zeros,
            document=f.document_bonus(hits, dense, self._decay) if every or w.document else zeros,
            sentence=sentence,
        )

    def _heading(self, embedder: Embedder, question_vector: Vector, headings: list[str]) -> f.Floats:
        # Headings in the candidates' order: within the budget of new ones, the best candidates' come first.
        vectors = self._cache.vectors(embedder, self.model, [t for t in headings if t], self._new_headings)
        if not vectors:
            return np.zeros(len(headings))
        texts = list(vectors)
        similarity = dict(zip(texts, f.cosines(question_vector, np.stack([vectors[t] for t in texts])), strict=True))
        # A heading not embedded yet (over this query's budget) counts as an average one: neither up nor down.
        neutral = float(np.mean([similarity[t] for t in headings if t in similarity]))
        return np.array([similarity.get(t, neutral) if t else 0.0 for t in headings], dtype=np.float64)

    def _sentence(
        self, embedder: Embedder, asked: frozenset[str], question_vector: Vector, hits: Sequence[SearchHit]
    ) -> f.Floats:
        chosen = [f.best_sentences(asked, h.chunk.text, self._sentences) for h in hits]
        flat = [s for sentences in chosen for s in sentences]
        if not flat:
            return np.zeros(len(hits))
        vectors = self._cache.vectors(embedder, self.model, flat)
        similarity = f.cosines(question_vector, np.stack([vectors[s] for s in flat]))
        best, at = np.zeros(len(hits)), 0
        for row, sentences in enumerate(chosen):
            if sentences:
                best[row] = float(similarity[at : at + len(sentences)].max())
            at += len(sentences)
        return best
