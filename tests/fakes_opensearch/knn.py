"""The k-NN plugin, computed: scores, the per-leaf choice between exact and approximate search, and scripts.

Scores are float32 arithmetic, as in the plugin:

- ``knn`` query, ``cosinesimil``: ``max((1 + cos) / 2, 0)`` for lucene (Lucene's COSINE similarity) and
  for faiss (``Faiss.java`` turns inner product into ``1 - cos``, ``SpaceType.COSINESIMIL.scoreTranslation``
  maps it to ``(2 - raw) / 2``); nmslib on a server before 2.19 used ``1 / (1 + raw)`` (SpaceType.java
  before k-NN#2357).
- ``knn_score`` script (``KNNScoringSpace.CosineSimilarity``): ``max((1 + cos) / 2, 0)`` when the index was
  *created* on 2.19.0 or later, ``1 + cos`` before; a document without the vector scores 0
  (``KNNScoreScript``).
- Painless ``cosineSimilarity`` (``KNNScoringUtil.cosineSimilarity``): the raw cosine, on every version.

Per leaf (segment), ``KNNWeight.searchLeaf`` (faiss, nmslib) and Lucene's ``AbstractKnnVectorQuery``
(lucene engine) decide between exact and approximate search; see ``faiss_leaf`` and ``lucene_leaf``.
The fake's approximate search walks a stand-in HNSW graph per segment (``hnsw.py``): a generous ``ef``
finds nearly all true neighbours, a small one misses some, and under a narrow filter faiss's walk
returns fewer than k, as the real engines do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from tests.fakes_opensearch import hnsw
from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled, script_error
from tests.fakes_opensearch.mapping import VectorField
from tests.fakes_opensearch.storage import Indexed, Segment
from tests.fakes_opensearch.versions import V_2_12_0, V_2_19_0, Version

#: KNNConstants.MAX_DISTANCE_COMPUTATIONS.
MAX_DISTANCE_COMPUTATIONS = 2_048_000
#: KNNQueryBuilder.K_MAX.
K_MAX = 10_000
#: KNNSettings.INDEX_KNN_DEFAULT_ALGO_PARAM_EF_SEARCH, and the value for indices created before 2.12.
EF_SEARCH_DEFAULT = 100
EF_SEARCH_DEFAULT_OLD = 512

Mode = Literal["exact", "ann", "ann_then_exact", "no_match"]
_F1 = np.float32(1.0)
_F2 = np.float32(2.0)


@dataclass(frozen=True, slots=True)
class LeafSearch:
    """How one leaf (segment) of one shard answered one ``knn`` query."""

    index: str
    shard: int
    segment: int
    engine: str
    mode: Mode
    #: Documents in the leaf that match the filter (live ones, with or without the vector); None: no filter.
    filter_cardinality: int | None
    #: Hits of the approximate search, before any exact fallback; None when it did not run.
    ann_hits: int | None
    hits: int


def default_ef_search(created: Version) -> int:
    """IndexHyperParametersUtil.getHNSWEFSearchValue."""
    return EF_SEARCH_DEFAULT if created >= V_2_12_0 else EF_SEARCH_DEFAULT_OLD


# ---------------------------------------------------------------------------- scores
def cosines(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``cos`` of ``query`` with each row, float32 (KNNScoringUtil.cosinesimil: dot / sqrt(|q|^2 |v|^2))."""
    dots = matrix @ query
    norms = np.einsum("ij,ij->i", matrix, matrix) * np.float32(np.dot(query, query))
    with np.errstate(divide="ignore", invalid="ignore"):
        result = (dots / np.sqrt(norms.astype(np.float64))).astype(np.float32)
    cos: np.ndarray = np.where(norms == 0, np.float32(0.0), result).astype(np.float32)
    return cos


def knn_query_scores(cos: np.ndarray, engine: str, server: Version) -> np.ndarray:
    """What the ``knn`` query scores, for a ``cosinesimil`` field."""
    scores: np.ndarray
    if engine == "nmslib" and server < V_2_19_0:
        scores = (_F1 / (_F1 + (_F1 - cos))).astype(np.float32)
    else:
        scores = np.maximum((_F1 + cos) / _F2, np.float32(0.0)).astype(np.float32)
    return scores


def knn_script_score(cos: np.float32, created: Version) -> np.float32:
    """What the ``knn_score`` script scores for ``cosinesimil``, keyed on the index-created version."""
    if created >= V_2_19_0:
        return np.float32(max((_F1 + cos) / _F2, np.float32(0.0)))
    return np.float32(_F1 + cos)


def as_float(score: np.floating[Any] | float) -> float:
    """A float32 score as a Python float that prints as the server prints it (``0.8660254``)."""
    return float(str(np.float32(score)))


# ---------------------------------------------------------------------------- leaf search
@dataclass(frozen=True, slots=True)
class LeafInput:
    """One leaf as the ``knn`` query sees it: its graph's rows (documents with the vector, deleted ones too)."""

    positions: list[int]
    graph: hnsw.Graph
    scores: np.ndarray
    live: set[int]
    #: Rows of live documents that match the filter (None: no filter).
    filtered: set[int] | None
    #: Live documents that match the filter, with or without the vector (None: no filter).
    cardinality: int | None


def leaf_input(
    segment: Segment, field: str, query: np.ndarray, engine: str, server: Version, filtered: set[int] | None
) -> LeafInput:
    """The leaf of ``segment`` for a query on ``field``; ``filtered`` holds positions of live matching documents."""
    cached = segment.graphs.get(field)
    if cached is None:
        rows = [(position, doc.vectors[field]) for position, doc in enumerate(segment.docs) if field in doc.vectors]
        matrix = np.stack([vector for _, vector in rows]) if rows else np.zeros((0, len(query)), np.float32)
        cached = ([position for position, _ in rows], matrix, hnsw.build(matrix))
        segment.graphs[field] = cached
    positions, matrix, graph = cached
    live = {row for row, position in enumerate(positions) if segment.live[position]}
    return LeafInput(
        positions=positions,
        graph=graph,
        scores=knn_query_scores(cosines(query, matrix), engine, server),
        live=live,
        filtered=None if filtered is None else {row for row in live if positions[row] in filtered},
        cardinality=None if filtered is None else len(filtered),
    )


@dataclass(frozen=True, slots=True)
class KnnParams:
    k: int
    ef_search: int
    dimension: int
    #: ``index.knn.advanced.filtered_exact_search_threshold`` (-1: unset).
    threshold: int
    disable_exact_after_ann: bool


def _exact(leaf: LeafInput, count: int) -> list[int]:
    rows = leaf.filtered if leaf.filtered is not None else leaf.live
    return sorted(rows, key=lambda row: (-float(leaf.scores[row]), row))[:count]


def faiss_leaf(leaf: LeafInput, params: KnnParams) -> tuple[list[int], Mode, int | None]:
    """KNNWeight.searchLeaf (faiss and nmslib): rows hit, the mode, and the approximate search's hit count."""
    k = params.k
    if leaf.cardinality == 0:
        return [], "no_match", None
    if leaf.cardinality is not None and _exact_preferred(leaf.cardinality, params):
        return _exact(leaf, k), "exact", None
    accepted = leaf.filtered if leaf.filtered is not None else leaf.live
    ann = hnsw.search(leaf.graph, leaf.scores, max(params.ef_search, k), accepted, filter_aware=False).rows[:k]
    # isFilteredExactSearchRequireAfterANNSearch: a filter, at least k filtered docs, fewer than k found.
    cardinality = leaf.cardinality
    if cardinality is not None and cardinality >= k and len(ann) < k and not params.disable_exact_after_ann:
        return _exact(leaf, k), "ann_then_exact", len(ann)
    return ann, "ann", len(ann)


def _exact_preferred(cardinality: int, params: KnnParams) -> bool:
    """KNNWeight.isFilteredExactSearchPreferred (only called when there is a filter)."""
    if cardinality <= params.k:
        return True
    if params.threshold != -1:
        return params.threshold >= cardinality
    return cardinality * params.dimension <= MAX_DISTANCE_COMPUTATIONS


def lucene_leaf(leaf: LeafInput, params: KnnParams) -> tuple[list[int], Mode, int | None]:
    """Lucene's AbstractKnnVectorQuery.getLeafResults with k = max(k, ef_search) (KNNQueryFactory: luceneK).

    No filter: an unbounded graph search. A filter matching at most luceneK documents: exact. Otherwise a
    filtered graph search that may visit at most (filter cost + 1) nodes; when it runs out, exact.
    """
    lucene_k = max(params.k, params.ef_search)
    if leaf.cardinality is None:
        rows = hnsw.search(leaf.graph, leaf.scores, lucene_k, leaf.live, filter_aware=True).rows[:lucene_k]
        return rows, "ann", len(rows)
    if leaf.cardinality == 0:
        return [], "no_match", None
    if leaf.cardinality <= lucene_k:
        return _exact(leaf, lucene_k), "exact", None
    walk = hnsw.search(
        leaf.graph, leaf.scores, lucene_k, leaf.filtered, filter_aware=True, visit_limit=leaf.cardinality + 1
    )
    if walk.incomplete:
        return _exact(leaf, lucene_k), "ann_then_exact", len(walk.rows)
    return walk.rows[:lucene_k], "ann", len(walk.rows)


def query_vector(values: Any, field: str = "vector") -> np.ndarray:
    """A query vector parsed as float32; 400 when it is not a non-empty list of numbers."""
    if (
        not isinstance(values, list)
        or not values
        or any(isinstance(v, bool) or not isinstance(v, int | float) for v in values)
    ):
        raise bad_request(f"[knn] field '{field}' requires a non-empty array of numbers")
    return np.asarray(values, dtype=np.float32)


def check_query_vector(vector: np.ndarray, field: VectorField, field_name: str) -> None:
    """KNNQueryBuilder.doToQuery: the vector's dimension, and no zero vector in cosine space."""
    if len(vector) != field.dimension:
        raise bad_request(f"Query vector has invalid dimension: {len(vector)}. Dimension should be: {field.dimension}")
    if field.space_type != "cosinesimil":
        raise not_modelled(f"the knn query in space [{field.space_type}] (field [{field_name}]); only cosinesimil")
    if not vector.any():
        raise bad_request("zero vector is not supported when space type is [cosinesimil]")


# ---------------------------------------------------------------------------- scripts
#: ``[1.0 +] cosineSimilarity(params.<query>, doc[params.<field> | '<field>'])``, whitespace removed.
_PAINLESS_COSINE = re.compile(
    r"(?P<plus>1(?:\.0*)?\+)?cosineSimilarity\(params\.(?P<query>\w+),"
    r"doc\[(?:params\.(?P<param>\w+)|'(?P<single>[^']+)'|\"(?P<double>[^\"]+)\")\]\)"
)
_PAINLESS_ACL = "ctx._source.acl_allow=params.allow;ctx._source.acl_deny=params.deny"


@dataclass(frozen=True, slots=True)
class ScoreScript:
    """A score script the fake can run: ``knn_score`` (lang knn) or Painless ``cosineSimilarity``."""

    lang: Literal["knn", "painless"]
    source: str
    field: str
    query: np.ndarray
    #: Painless only: whether the source adds ``1.0 +`` to the cosine.
    plus_one: bool = False

    def check(self, field: VectorField | None) -> None:
        """The checks run once per shard (KNNScoreScriptLeafFactory; for Painless, KNNScoringUtil)."""
        if self.lang == "painless":
            try:
                if field is None:
                    raise bad_request(f"No field found for [{self.field}] in mapping")
                if len(self.query) != field.dimension:
                    given = len(self.query)
                    raise bad_request(f"query vector dimension mismatch. Expected: {field.dimension}, Given: {given}")
                if not self.query.any():
                    raise bad_request("zero vector is not supported when space type is [cosinesimil]")
            except OpenSearchError as error:
                raise script_error(self.source, "painless", error) from None
            return
        if field is None:
            raise bad_request("Incompatible field_type for cosine space. The field type must be knn_vector.")
        if len(self.query) != field.dimension:
            raise OpenSearchError(
                400,
                "illegal_state_exception",
                f"Object's length={len(self.query)} does not match the expected length={field.dimension}.",
            )
        if not self.query.any():
            raise bad_request("zero vector is not supported when space type is [cosinesimil]")

    def score(self, doc: Indexed, created: Version) -> np.float32:
        """The score of one document (after ``check``)."""
        vector = doc.vectors.get(self.field)
        if self.lang == "knn":
            if vector is None:
                return np.float32(0.0)
            return knn_script_score(cosines(self.query, vector[np.newaxis, :])[0], created)
        if vector is None:
            cause = OpenSearchError(
                400,
                "illegal_state_exception",
                f"One of the document doesn't have a value for field '{self.field}'. This can be avoided by checking "
                f"if a document has a value for the field or not by doc['{self.field}'].size() == 0 ? 0 : "
                "{your script}",
            )
            raise script_error(self.source, "painless", cause)
        cos = cosines(self.query, vector[np.newaxis, :])[0]
        return np.float32(_F1 + cos) if self.plus_one else cos


def parse_score_script(script: Any, *, knn_plugin: bool) -> ScoreScript:
    """The ``script`` of a ``script_score`` query; 400 for anything the fake does not run."""
    if not isinstance(script, dict):
        raise not_modelled(f"script {script!r}")
    if "id" in script:
        raise not_modelled("stored scripts")
    source, lang, params = script.get("source"), script.get("lang", "painless"), script.get("params") or {}
    if not isinstance(source, str) or not isinstance(params, dict):
        raise bad_request("script requires [source] and an object of [params]", type_="script_exception")
    if lang == "knn" and knn_plugin:
        if source != "knn_score":
            raise bad_request(f"Unknown script name {source}")
        values = {}
        for name in ("field", "space_type", "query_value"):
            if params.get(name) is None:
                raise bad_request(f"Missing parameter [{name}]")
            values[name] = params[name]
        if values["space_type"] != "cosinesimil":
            raise not_modelled(f"knn_score in space [{values['space_type']}]; only cosinesimil")
        return ScoreScript("knn", source, str(values["field"]), query_vector(values["query_value"], "query_value"))
    if lang != "painless":
        raise bad_request(f"script_lang not supported [{lang}]")
    match = _PAINLESS_COSINE.fullmatch(re.sub(r"\s+", "", source))
    if match is None or not knn_plugin:
        raise not_modelled(f"this painless score script: {source!r}")
    field = match["single"] or match["double"] or params.get(match["param"] or "")
    if not isinstance(field, str):
        raise script_error(source, "painless", bad_request(f"params.{match['param']} is not a field name"))
    if match["query"] not in params:
        raise script_error(source, "painless", bad_request(f"params.{match['query']} is missing"))
    vector = query_vector(params[match["query"]], match["query"])
    return ScoreScript("painless", source, field, vector, plus_one=match["plus"] is not None)


def parse_update_script(script: Any) -> tuple[list[Any], list[Any]]:
    """The one update script the fake runs: replace ``acl_allow`` and ``acl_deny`` from params."""
    if not isinstance(script, dict) or script.get("lang", "painless") != "painless":
        raise not_modelled(f"update script {script!r}")
    source, params = script.get("source", ""), script.get("params") or {}
    if re.sub(r"\s+", "", str(source)).rstrip(";") != _PAINLESS_ACL:
        raise OpenSearchError(
            400, "script_exception", f"the fake OpenSearch does not model this painless update script: {source!r}"
        )
    if "allow" not in params or "deny" not in params:
        raise script_error(str(source), "painless", bad_request("params.allow and params.deny are required"))
    return params["allow"], params["deny"]
