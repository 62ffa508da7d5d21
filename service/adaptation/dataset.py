"""The training set of ``docqa adapt``: pseudo-queries, each with its positive and hard negatives.

Hard negatives are what the store's own searches rank high for the query but that come from *another*
document (a chunk of the same document may well answer it too): the dense and the BM25 lists taken in turn.
Queries of a tenth of the documents (at least one) are held out, with no training query from those
documents, to measure the model on pages it has never seen. Only ``TrainingReads`` is read.

The set is saved as JSON in the job's work folder with a fingerprint of what it was made from (the options
and each document's content hash), so a killed job starts again from it and not from the mining.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from random import Random

from indexer.embedder import Embedder
from indexer.index import ChunkRecord
from service.adaptation.options import MIN_DOCUMENTS, MIN_QUERIES
from service.adaptation.pseudo_queries import PseudoQuery, sample_queries
from service.query.guarded import TrainingReads
from service.ranking.features import CHARS_PER_TOKEN, passage

#: Share of the documents whose queries are held out.
HELD_OUT_SHARE = 0.1
#: Held-out queries kept at most (each costs a search and ~30 model scores at evaluation).
MAX_HELD_OUT = 300
#: Candidates each search returns when mining negatives.
MINE_K = 20


class NotEnoughText(ValueError):
    """The scope holds too little text to learn from; the message says what is needed."""


@dataclass(frozen=True, slots=True)
class Example:
    """One training group: the query, its positive passage, its negative passages."""

    query: str
    kind: str
    document_id: str
    positive: str
    negatives: list[str]


@dataclass(frozen=True, slots=True)
class HeldOut:
    """A held-out query and the document that answers it."""

    query: str
    kind: str
    document_id: str
    chunk_id: str


@dataclass
class Dataset:
    fingerprint: str
    scope: str
    documents: int
    chunks: int
    train: list[Example] = field(default_factory=list)
    held_out: list[HeldOut] = field(default_factory=list)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> Dataset | None:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                fingerprint=raw["fingerprint"],
                scope=raw["scope"],
                documents=raw["documents"],
                chunks=raw["chunks"],
                train=[Example(**e) for e in raw["train"]],
                held_out=[HeldOut(**h) for h in raw["held_out"]],
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None


def fingerprint(options: dict[str, object], contents: Sequence[tuple[str, str]]) -> str:
    """A hash of the options that shape the set and of (document id, content hash) of every document in scope."""
    digest = hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode())
    for document_id, content_hash in sorted(contents):
        digest.update(f"\n{document_id}\t{content_hash}".encode())
    return digest.hexdigest()


def build(
    reads: TrainingReads,
    embedder: Callable[[], Embedder],
    *,
    fingerprint_: str,
    max_queries: int,
    negatives: int,
    max_tokens: int,
    seed: int,
    on_progress: Callable[[str, int, int], None],
) -> Dataset:
    """Read the scope, make pseudo-queries, hold some out, mine negatives for the rest (``embedder`` is
    called once there is enough text: loading a model is not the first thing a refused run does)."""
    rng = Random(seed)
    ids = reads.documents()
    documents: list[tuple[str, list[ChunkRecord]]] = []
    chunks = 0
    for i, document_id in enumerate(ids):
        found = [c for c in reads.chunks_of(document_id) if c.text.strip()]
        if found:
            documents.append((found[0].title, found))
            chunks += len(found)
        on_progress("reading", i + 1, len(ids))
    if len(documents) < MIN_DOCUMENTS:
        raise NotEnoughText(
            f"in scope ({reads.scope}) there are {len(documents)} documents with text; adapt needs at least "
            f"{MIN_DOCUMENTS} documents and {MIN_QUERIES} passages of prose or headings to learn from"
        )
    doc_ids = [chunks_[0].document_id for _, chunks_ in documents]
    held_docs = set(rng.sample(doc_ids, max(1, round(len(doc_ids) * HELD_OUT_SHARE))))
    queries = sample_queries(documents, max_queries + MAX_HELD_OUT, rng)
    train_q = [q for q in queries if q.document_id not in held_docs][:max_queries]
    held = [q for q in queries if q.document_id in held_docs][:MAX_HELD_OUT]
    if len(train_q) < MIN_QUERIES:
        raise NotEnoughText(
            f"in scope ({reads.scope}) {len(train_q)} training queries could be made from {len(documents)} documents; "
            f"adapt needs at least {MIN_QUERIES} (passages with a heading or a sentence of "
            "eight words of prose) — index more documents, or name a wider scope"
        )
    by_id = {c.chunk_id: c for _, cs in documents for c in cs}
    max_chars = max_tokens * CHARS_PER_TOKEN
    vectors = embedder().embed_documents([q.query for q in train_q])
    examples: list[Example] = []
    for i, (q, vector) in enumerate(zip(train_q, vectors, strict=True)):
        negs = _negatives(reads, q, vector, negatives, max_chars, by_id, rng)
        if negs:
            positive = passage(_with_text(by_id[q.chunk_id], q.text), max_chars)
            examples.append(Example(q.query, q.kind, q.document_id, positive, negs))
        on_progress("mining", i + 1, len(train_q))
    return Dataset(
        fingerprint=fingerprint_,
        scope=reads.scope,
        documents=len(documents),
        chunks=chunks,
        train=examples,
        held_out=[HeldOut(q.query, q.kind, q.document_id, q.chunk_id) for q in held],
    )


def _with_text(chunk: ChunkRecord, text: str) -> ChunkRecord:
    from dataclasses import replace

    return replace(chunk, text=text)


def _negatives(
    reads: TrainingReads,
    q: PseudoQuery,
    vector: object,
    count: int,
    max_chars: int,
    by_id: dict[str, ChunkRecord],
    rng: Random,
) -> list[str]:
    dense = reads.nearest(vector, MINE_K)  # type: ignore[arg-type]
    lexical = reads.keyword(q.query, MINE_K)
    picked: list[ChunkRecord] = []
    seen: set[str] = set()
    for pair in zip(dense + [None] * MINE_K, lexical + [None] * MINE_K, strict=False):
        for hit in pair:
            if hit is None or len(picked) >= count:
                continue
            chunk = hit.chunk
            if chunk.document_id == q.document_id or chunk.chunk_id in seen or not chunk.text.strip():
                continue
            seen.add(chunk.chunk_id)
            picked.append(by_id.get(chunk.chunk_id, chunk))
    others = (
        []
        if len(picked) >= count
        else [c for c in by_id.values() if c.document_id != q.document_id and c.chunk_id not in seen]
    )
    while len(picked) < count and others:  # a small store: random chunks of other documents
        picked.append(others.pop(rng.randrange(len(others))))
    return [passage(c, max_chars) for c in picked]
