"""The query DSL the fake understands, parsed once per request and run per shard.

Modelled: ``match_all``, ``match_none``, ``term``, ``terms``, ``ids``, ``exists``, ``bool``, ``constant_score``,
``knn``, ``script_score``, ``match`` (BM25 on a ``text`` field, ``bm25.py``) and ``prefix``, ``wildcard``, ``range``
(on keyword and date fields, ``term_level.py``). The other leaf queries score a
constant 1.0 (times ``boost``). Other query types the server knows answer 400 ``fake_not_modelled_exception``; names
the server does not know answer its ``parsing_exception``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tests.fakes_opensearch import knn
from tests.fakes_opensearch.document_parser import tokens
from tests.fakes_opensearch.errors import OpenSearchError, bad_request, not_modelled, parsing
from tests.fakes_opensearch.mapping import FieldInfo, VectorField
from tests.fakes_opensearch.settings import DISABLE_EXACT, EF_SEARCH, EXACT_THRESHOLD
from tests.fakes_opensearch.storage import Indexed, IndexState, Segment
from tests.fakes_opensearch.versions import Version

#: (segment number in the shard, position in the segment).
DocKey = tuple[int, int]
Matches = dict[DocKey, float]

_KNOWN_ELSEWHERE = {
    "match_phrase", "match_phrase_prefix", "multi_match", "regexp",
    "fuzzy", "query_string", "simple_query_string", "nested", "function_score", "dis_max", "boosting",
    "has_child", "has_parent", "neural", "hybrid", "more_like_this", "script", "wrapper", "terms_set",
    "intervals", "distance_feature", "rank_feature", "geo_distance", "geo_bounding_box", "match_bool_prefix",
    "combined_fields", "span_term", "percolate", "pinned", "neural_sparse", "parent_id",
}  # fmt: skip


@dataclass
class ShardView:
    """One shard's refreshed documents, as a query sees them."""

    index: IndexState
    shard: int
    server: Version
    knn_plugin: bool
    leaves: list[Segment]
    knn_log: list[knn.LeafSearch] = field(default_factory=list)
    #: BM25 statistics come from these segments (every searched shard's, ``dfs_query_then_fetch``); None: ``leaves``.
    stats_leaves: list[Segment] | None = None

    def docs(self) -> Iterator[tuple[DocKey, Indexed]]:
        for ordinal, segment in enumerate(self.leaves):
            for position, doc in segment.live_docs():
                yield (ordinal, position), doc

    def doc(self, key: DocKey) -> Indexed:
        return self.leaves[key[0]].docs[key[1]]


class Query:
    """A parsed query: ``run`` answers the matching documents of one shard and their scores."""

    def run(self, view: ShardView) -> Matches:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class MatchAll(Query):
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        return {key: self.boost for key, _ in view.docs()}


@dataclass(frozen=True, eq=False)
class MatchNone(Query):
    def run(self, view: ShardView) -> Matches:
        return {}


@dataclass(frozen=True, eq=False)
class Terms(Query):
    """``term`` (one value) and ``terms``: any value of the field equals any value given."""

    field: str
    values: tuple[Any, ...]
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        info = view.index.mapping.field(self.field)
        if info is None:
            return {}
        wanted = {_query_value(info, value) for value in self.values}
        return {key: self.boost for key, doc in view.docs() if wanted & _doc_values(info, doc)}


def _query_value(info: FieldInfo, value: Any) -> Any:
    if info.type in ("knn_vector", "object"):
        raise OpenSearchError(
            400, "query_shard_exception", f"Field [{info.path}] of type [{info.type}] does not support term queries"
        )
    if not info.searchable and not info.doc_values:
        raise bad_request(f"Cannot search on field [{info.path}] since it is not indexed.")
    if info.type == "date":
        raise not_modelled(f"term queries on date field [{info.path}]")
    if isinstance(value, dict | list) or value is None:
        raise parsing(f"[term] query does not support value {value!r} for field [{info.path}]")
    if info.type in ("keyword", "text"):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if info.type == "boolean":
        if value in (True, "true"):
            return True
        if value in (False, "false"):
            return False
        raise OpenSearchError(400, "query_shard_exception", f"Can't parse boolean value [{value}]")
    try:
        return float(value)
    except ValueError:
        raise OpenSearchError(
            400, "query_shard_exception", f'failed to create query: For input string: "{value}"'
        ) from None


def _doc_values(info: FieldInfo, doc: Indexed) -> set[Any]:
    values = doc.values.get(info.path, [])
    if info.type == "text":
        return {token for value in values for token in tokens(value)}
    if info.type in ("keyword", "boolean"):
        return set(values)
    return {float(value) for value in values}


@dataclass(frozen=True, eq=False)
class Ids(Query):
    values: frozenset[str]
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        return {key: self.boost for key, doc in view.docs() if doc.id in self.values}


@dataclass(frozen=True, eq=False)
class Exists(Query):
    field: str
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        paths = [p for p in view.index.mapping.fields if p == self.field or p.startswith(f"{self.field}.")]
        return {
            key: self.boost
            for key, doc in view.docs()
            if any(doc.values.get(path) or path in doc.vectors for path in paths)
        }


@dataclass(frozen=True, eq=False)
class Bool(Query):
    must: tuple[Query, ...] = ()
    filter: tuple[Query, ...] = ()
    should: tuple[Query, ...] = ()
    must_not: tuple[Query, ...] = ()
    minimum_should_match: str | int | None = None
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        candidates: Matches | None = None
        for clause, scoring in [*((c, True) for c in self.must), *((c, False) for c in self.filter)]:
            found = clause.run(view)
            if candidates is None:
                candidates = {key: (score if scoring else 0.0) for key, score in found.items()}
            else:
                candidates = {
                    key: total + (found[key] if scoring else 0.0) for key, total in candidates.items() if key in found
                }
        if candidates is None:
            candidates = {key: 0.0 for key, _ in view.docs()}
        required = self._required_should()
        if self.should:
            found_should = [clause.run(view) for clause in self.should]
            kept: Matches = {}
            for key, total in candidates.items():
                hits = [found[key] for found in found_should if key in found]
                if len(hits) >= required:
                    kept[key] = total + sum(hits)
            candidates = kept
        for clause in self.must_not:
            excluded = clause.run(view)
            candidates = {key: score for key, score in candidates.items() if key not in excluded}
        return {key: score * self.boost for key, score in candidates.items()}

    def _required_should(self) -> int:
        spec = self.minimum_should_match
        if spec is None:
            return 0 if (self.must or self.filter) else 1
        count = len(self.should)
        text = str(spec)
        if text.endswith("%"):
            percent = int(text[:-1])
            needed = count * abs(percent) // 100
            return needed if percent >= 0 else count - needed
        number = int(text)
        return number if number >= 0 else max(count + number, 0)


@dataclass(frozen=True, eq=False)
class ConstantScore(Query):
    filter: Query
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        return {key: self.boost for key in self.filter.run(view)}


@dataclass(frozen=True, eq=False)
class Knn(Query):
    field: str
    vector: np.ndarray
    k: int
    filter: Query | None
    ef_search: int | None
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        """The best k documents of this shard (KNNWeight / AbstractKnnVectorQuery, leaf by leaf, then merged)."""
        info = view.index.mapping.field(self.field)
        vector_field = info.vector if info is not None else None
        if vector_field is None:
            raise bad_request(f"Field '{self.field}' is not knn_vector type.")
        knn.check_query_vector(self.vector, vector_field, self.field)
        engine = vector_field.engine
        if self.filter is not None and engine == "nmslib":
            raise bad_request("Engine [NMSLIB] does not support filters")
        filtered = set(self.filter.run(view)) if self.filter is not None else None
        index = view.index
        params = knn.KnnParams(
            k=self.k,
            ef_search=self.ef_search or int(index.setting(EF_SEARCH) or knn.default_ef_search(index.created)),
            dimension=vector_field.dimension,
            threshold=int(index.setting(EXACT_THRESHOLD) or -1),
            disable_exact_after_ann=index.setting(DISABLE_EXACT) == "true",
        )
        found: list[tuple[float, DocKey]] = []
        for ordinal, segment in enumerate(view.leaves):
            positions = None if filtered is None else {p for (o, p) in filtered if o == ordinal}
            leaf = knn.leaf_input(segment, self.field, self.vector, engine, view.server, positions)
            search = knn.lucene_leaf if engine == "lucene" else knn.faiss_leaf
            rows, mode, ann_hits = search(leaf, params)
            view.knn_log.append(
                knn.LeafSearch(index.name, view.shard, ordinal, engine, mode, leaf.cardinality, ann_hits, len(rows))
            )
            found.extend((float(leaf.scores[row]), (ordinal, leaf.positions[row])) for row in rows)
        found.sort(key=lambda item: (-item[0], item[1]))
        return {key: score * self.boost for score, key in found[: self.k]}


@dataclass(frozen=True, eq=False)
class ScriptScore(Query):
    query: Query
    script: knn.ScoreScript
    min_score: float | None = None
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        self.script.check(
            view.index.mapping.vector(self.script.field)
            if self.script.lang == "knn"
            else _painless_field(view, self.script.field)
        )
        scored: Matches = {}
        for key in self.query.run(view):
            score = self.script.score(view.doc(key), view.index.created)
            if score < 0 or np.isnan(score):
                raise bad_request(
                    f"script_score script returned an invalid score [{as_text(score)}] for doc [{key[1]}]. "
                    "Must be a non-negative score!"
                )
            if self.min_score is None or score >= self.min_score:
                scored[key] = knn.as_float(score) * self.boost
        return scored


def _painless_field(view: ShardView, name: str) -> VectorField | None:
    vector_field = view.index.mapping.vector(name)
    if vector_field is None and view.index.mapping.field(name) is not None:
        raise bad_request(f"cosineSimilarity needs a knn_vector field, [{name}] is not one")
    return vector_field


def as_text(score: np.floating[Any]) -> str:
    return str(np.float32(score))


# ---------------------------------------------------------------------------- parsing
def parse_query(spec: Any, *, knn_plugin: bool) -> Query:
    """Parse one query object (``{"bool": {...}}``); 400 with the server's error type when malformed."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise parsing(f"[_na] query malformed, must contain exactly one query type, found {spec!r}")
    ((kind, body),) = spec.items()
    parser = _PARSERS.get(kind)
    if parser is None or (kind == "knn" and not knn_plugin):
        if kind in _KNOWN_ELSEWHERE:
            raise not_modelled(f"the [{kind}] query")
        raise parsing(f"unknown query [{kind}]")
    if not isinstance(body, dict):
        raise parsing(f"[{kind}] query malformed, no start_object after query name")
    return parser(body, knn_plugin)


def _boost(body: dict[str, Any], kind: str) -> float:
    boost = body.get("boost", 1.0)
    if isinstance(boost, bool) or not isinstance(boost, int | float):
        raise parsing(f"[{kind}] query does not support [boost] value {boost!r}")
    return float(boost)


def _only(body: dict[str, Any], kind: str, allowed: set[str]) -> None:
    for key in body:
        if key not in allowed:
            raise parsing(f"[{kind}] query does not support [{key}]")


def _match_all(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "match_all", {"boost", "_name"})
    return MatchAll(_boost(body, "match_all"))


def _match_none(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "match_none", {"boost", "_name"})
    return MatchNone()


def _single_field(body: dict[str, Any], kind: str) -> tuple[str, Any, dict[str, Any]]:
    fields = {key: value for key, value in body.items() if key not in ("boost", "_name")}
    if len(fields) != 1:
        raise parsing(f"[{kind}] query doesn't support multiple fields, found {sorted(fields)}")
    ((name, value),) = fields.items()
    return name, value, body


def _term(body: dict[str, Any], knn_plugin: bool) -> Query:
    name, value, _ = _single_field(body, "term")
    boost = 1.0
    if isinstance(value, dict):
        _only(value, "term", {"value", "boost", "_name", "case_insensitive"})
        if value.get("case_insensitive"):
            raise not_modelled("case_insensitive term queries")
        if "value" not in value:
            raise parsing("[term] query requires [value]")
        boost = _boost(value, "term")
        value = value["value"]
    return Terms(name, (value,), boost * _boost(body, "term"))


def _terms(body: dict[str, Any], knn_plugin: bool) -> Query:
    name, values, _ = _single_field(body, "terms")
    if not isinstance(values, list):
        if isinstance(values, dict):
            raise not_modelled("terms lookup")
        raise parsing(f"[terms] query does not support [{name}] with a non-array value")
    return Terms(name, tuple(values), _boost(body, "terms"))


def _ids(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "ids", {"values", "boost", "_name"})
    values = body.get("values", [])
    if not isinstance(values, list):
        raise parsing("[ids] query [values] must be an array")
    return Ids(frozenset(str(v) for v in values), _boost(body, "ids"))


def _exists(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "exists", {"field", "boost", "_name"})
    if not isinstance(body.get("field"), str):
        raise parsing("[exists] must be provided with a [field]")
    return Exists(body["field"], _boost(body, "exists"))


def _clauses(value: Any, knn_plugin: bool) -> tuple[Query, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(parse_query(item, knn_plugin=knn_plugin) for item in items)


def _bool(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(
        body,
        "bool",
        {"must", "filter", "should", "must_not", "minimum_should_match", "boost", "_name", "adjust_pure_negative"},
    )
    spec = body.get("minimum_should_match")
    if spec is not None and not str(spec).rstrip("%").lstrip("-").isdigit():
        raise not_modelled(f"minimum_should_match [{spec}]")
    return Bool(
        must=_clauses(body.get("must", []), knn_plugin),
        filter=_clauses(body.get("filter", []), knn_plugin),
        should=_clauses(body.get("should", []), knn_plugin),
        must_not=_clauses(body.get("must_not", []), knn_plugin),
        minimum_should_match=spec,
        boost=_boost(body, "bool"),
    )


def _constant_score(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "constant_score", {"filter", "boost", "_name"})
    if "filter" not in body:
        raise parsing("[constant_score] requires a 'filter' element")
    return ConstantScore(parse_query(body["filter"], knn_plugin=knn_plugin), _boost(body, "constant_score"))


def _knn(body: dict[str, Any], knn_plugin: bool) -> Query:
    if len(body) != 1:
        raise parsing(f"[knn] query doesn't support multiple fields, found {sorted(body)}")
    ((name, spec),) = body.items()
    if not isinstance(spec, dict):
        raise parsing("[knn] query malformed, no start_object after field name")
    for key in spec:
        if key in ("min_score", "max_distance", "rescore", "expand_nested_docs"):
            if key == "rescore" and spec[key] is False:
                continue
            raise not_modelled(f"knn parameter [{key}]")
        if key not in ("vector", "k", "filter", "method_parameters", "boost", "_name"):
            raise parsing(f"[knn] unknown field [{key}]")
    vector = knn.query_vector(spec.get("vector"))
    k = spec.get("k")
    if k is None:
        raise bad_request("[knn] requires k or distance or score to be set")
    if isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= knn.K_MAX:
        raise bad_request(f"[knn] requires k to be in the range (0, {knn.K_MAX}]")
    ef_search = None
    for key, value in (spec.get("method_parameters") or {}).items():
        if key != "ef_search":
            raise not_modelled(f"knn method parameter [{key}]")
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise bad_request("[knn] requires ef_search to be greater than 0")
        ef_search = value
    filter_query = parse_query(spec["filter"], knn_plugin=knn_plugin) if spec.get("filter") is not None else None
    return Knn(name, vector, k, filter_query, ef_search, _boost(spec, "knn"))


def _match(body: dict[str, Any], knn_plugin: bool) -> Query:
    from tests.fakes_opensearch.bm25 import parse_match  # bm25 builds on this module

    return parse_match(body)


def _prefix(body: dict[str, Any], knn_plugin: bool) -> Query:
    from tests.fakes_opensearch.term_level import parse_prefix  # term_level builds on this module

    return parse_prefix(body)


def _wildcard(body: dict[str, Any], knn_plugin: bool) -> Query:
    from tests.fakes_opensearch.term_level import parse_wildcard

    return parse_wildcard(body)


def _range(body: dict[str, Any], knn_plugin: bool) -> Query:
    from tests.fakes_opensearch.term_level import parse_range

    return parse_range(body)


def _script_score(body: dict[str, Any], knn_plugin: bool) -> Query:
    _only(body, "script_score", {"query", "script", "min_score", "boost", "_name"})
    if "query" not in body or "script" not in body:
        raise parsing("[script_score] requires 'query' and 'script' fields")
    return ScriptScore(
        parse_query(body["query"], knn_plugin=knn_plugin),
        knn.parse_score_script(body["script"], knn_plugin=knn_plugin),
        body.get("min_score"),
        _boost(body, "script_score"),
    )


_PARSERS = {
    "match_all": _match_all,
    "match_none": _match_none,
    "term": _term,
    "terms": _terms,
    "ids": _ids,
    "exists": _exists,
    "bool": _bool,
    "constant_score": _constant_score,
    "knn": _knn,
    "script_score": _script_score,
    "match": _match,
    "prefix": _prefix,
    "wildcard": _wildcard,
    "range": _range,
}
