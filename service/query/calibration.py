"""Calibrating a store's relevancy scale from its own content: probes in, a report out.

The run samples up to ``sample`` documents (a seeded draw, so a re-run draws
the same), builds answerable probes from their titles, headings and sentences
(``probes``) and near-domain probes from the same titles and headings turned
toward a product the store does not cover (``service.domain.near_domain``),
embeds them and the built-in off-topic questions with the store's embedding
model, and keeps each probe's best cosine over the whole store — and, for a
near-domain probe, whether the answer's check of the question's names
(``service.query.answerability``) refuses it whatever its score. It runs for
an administrator over every chunk, whatever its ACL, through the one reader
named for that (``guarded.StoreWideReads``); the report holds numbers only,
never a probe or a chunk's text. Storing the proposed scale is the admin
writer's job (``Admin.apply_calibration``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from random import Random

import numpy as np
import numpy.typing as npt

from acl.errors import InvalidArgument, NotFound
from indexer.embedder import Embedder
from indexer.index import Index
from indexer.index.port import Vector
from service.domain.calibration_report import CalibrationReport, NearProbe, ProbeCounts, Sampled, build_report
from service.domain.near_domain import near_probes
from service.domain.offtopic import OFF_TOPIC_QUESTIONS
from service.domain.threshold import Threshold
from service.persistence.ports import DocumentCatalog, StoreRepository
from service.query.answerability import unspoken
from service.query.guarded import StoreWideReads
from service.query.probes import document_probes

#: Documents sampled when the caller names no number.
DEFAULT_SAMPLE = 200
#: The most documents one calibration may sample.
MAX_SAMPLE = 5_000
#: The seed of the document and probe draws: the same store calibrates the same way twice.
DEFAULT_SEED = 17
#: Chunks of one document read to draw its headings and sentence from.
MAX_CHUNKS_PER_DOCUMENT = 1_000
#: Neighbours asked for per probe; the best is kept (a few, so an approximate search finds the true best).
PROBE_K = 5
#: Texts embedded per call.
EMBED_BATCH = 64
#: Neighbours of a near-domain probe its names are checked against (as many as a question's candidates).
NEAR_K = 30
#: Chunks of a sampled document whose text rules out a foreign name for near-domain probes.
KNOWN_CHUNKS_PER_DOCUMENT = 20


def validate_sample(sample: object) -> int:
    """The number of documents to sample: DEFAULT_SAMPLE for None, else an integer in [1, MAX_SAMPLE]."""
    if sample is None:
        return DEFAULT_SAMPLE
    if isinstance(sample, bool) or not isinstance(sample, int) or not 1 <= sample <= MAX_SAMPLE:
        raise InvalidArgument(f"sample must be an integer between 1 and {MAX_SAMPLE}, got {sample!r}")
    return sample


class Calibrator:
    """Measures where a store's answerable and off-topic questions score, and proposes a scale."""

    def __init__(
        self,
        *,
        stores: StoreRepository,
        catalog: DocumentCatalog,
        index: Index,
        embedder_for: Callable[[str], Embedder],
        off_topic: Sequence[str] = OFF_TOPIC_QUESTIONS,
    ) -> None:
        self._stores = stores
        self._catalog = catalog
        self._index = index
        self._embedder_for = embedder_for
        self._off_topic = tuple(off_topic)

    def run(self, store_id: str, sample: int | None = None, seed: int = DEFAULT_SEED) -> CalibrationReport:
        """The store's calibration report; NotFound for an unknown store, InvalidArgument for one with no chunks."""
        store = self._stores.get_store(store_id) if isinstance(store_id, str) else None
        if store is None:
            raise NotFound(f"store {store_id!r} not found")
        wanted = validate_sample(sample)
        reads = StoreWideReads(self._index, store.id)
        chunks = reads.chunk_count()
        documents = sorted((d for d in self._catalog.list_documents(store.id) if d.chunk_count > 0), key=lambda d: d.id)
        if chunks == 0 or not documents:
            raise InvalidArgument(f"store {store.id} has no indexed chunks to calibrate from")
        rng = Random(seed)
        sampled = sorted(rng.sample(documents, min(wanted, len(documents))), key=lambda d: d.id)
        embedder = self._embedder_for(store.embedding_model)
        fetch = _embed(embedder, [d.title or d.id for d in sampled])
        titles: list[str] = []
        headings: list[str] = []
        sentences: list[str] = []
        known: list[str] = []  # text of the sampled documents: the foreign names a near probe may not use
        for document, vector in zip(sampled, fetch, strict=True):
            k = max(1, min(document.chunk_count, MAX_CHUNKS_PER_DOCUMENT))
            hits = reads.document_hits(vector, k, document.id)
            if not hits:  # the catalog knows it, the index no longer does: nothing to draw from
                continue
            known += [document.title, *(hit.chunk.text for hit in hits[:KNOWN_CHUNKS_PER_DOCUMENT])]
            t, h, s = document_probes(document.title, [hit.chunk for hit in hits], rng)
            titles += t
            headings += h
            sentences += s
        answerable = self._best_scores(reads, embedder, titles + headings + sentences)
        if not answerable:
            raise InvalidArgument(f"store {store.id} has no indexed chunks to calibrate from")
        off_topic = self._best_scores(reads, embedder, list(self._off_topic))
        near = self._near_scores(reads, embedder, near_probes(titles + headings, known, rng))
        return build_report(
            Sampled(
                store_id=store.id,
                embedding_model=store.embedding_model,
                level=store.level,
                current=Threshold(store.min_threshold, store.max_threshold),
                documents=len(documents),
                documents_sampled=len(sampled),
                chunks=chunks,
                probes=ProbeCounts(len(titles), len(headings), len(sentences)),
                answerable=answerable,
                off_topic=off_topic,
                near_domain=near,
            )
        )

    def _near_scores(self, reads: StoreWideReads, embedder: Embedder, probes: Sequence[str]) -> list[NearProbe]:
        """Each near-domain probe's best score, and whether the check of its names refuses it."""
        found: list[NearProbe] = []
        for probe, vector in zip(probes, _embed(embedder, probes), strict=True):
            hits = reads.nearest(vector, NEAR_K)
            if hits:
                found.append(NearProbe(float(hits[0].score), bool(unspoken(probe, hits))))
        return found

    def _best_scores(self, reads: StoreWideReads, embedder: Embedder, probes: Sequence[str]) -> list[float]:
        scores = []
        for vector in _embed(embedder, probes):
            hits = reads.nearest(vector, PROBE_K)
            if hits:
                scores.append(float(hits[0].score))
        return scores


def _embed(embedder: Embedder, texts: Sequence[str]) -> list[Vector]:
    """Each text embedded as a question is: batched when the embedder embeds questions as documents."""
    if type(embedder).embed_query is not Embedder.embed_query:
        return [embedder.embed_query(t) for t in texts]
    rows: list[Vector] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch: npt.NDArray[np.float32] = embedder.embed_documents(texts[start : start + EMBED_BATCH])
        rows.extend(batch[i] for i in range(batch.shape[0]))
    return rows
