"""The ``match`` query on a ``text`` field, scored as Lucene's ``BM25Similarity`` scores it (OpenSearch's default).

Per query term (each token of the analysed query text, duplicates included, as ``QueryBuilder`` makes one
``SHOULD`` clause per token), in float32 as Lucene computes it:

- ``idf = ln(1 + (docCount − docFreq + 0.5) / (docFreq + 0.5))``
- ``tf part = freq / (freq + k1 · (1 − b + b · dl / avgdl))`` with ``k1 = 1.2``, ``b = 0.75`` (Lucene 8+ has no
  ``k1 + 1`` factor), ``avgdl = sumTotalTermFreq / docCount``, and ``dl`` the field's token count as its
  one-byte norm stores it (``SmallFloat.intToByte4``, decoded with ``byte4ToInt``: lengths above 24 lose precision);
- score = ``boost · idf · tf part``, summed over the matching clauses (``operator: and`` needs every term).

Statistics are those of the shard (``query_then_fetch``, the default) or of every shard the request searches
(``search_type=dfs_query_then_fetch``), and, as in Lucene until a merge, they count the deleted documents a
segment still holds. The analyser is the fake's standard one: lower-cased word tokens (``document_parser.tokens``),
no stopwords. ``zero_terms_query`` is ``none``: a query with no token matches nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.fakes_opensearch.document_parser import tokens
from tests.fakes_opensearch.errors import not_modelled, parsing
from tests.fakes_opensearch.queries import Matches, Query, ShardView
from tests.fakes_opensearch.storage import Segment

K1 = np.float32(1.2)
B = np.float32(0.75)
_ONE = np.float32(1.0)


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits = i & 0x07
    shift = (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_NUM_FREE_VALUES = 255 - _long_to_int4(2**31 - 1)


def int_to_byte4(i: int) -> int:
    """``SmallFloat.intToByte4``: a non-negative int in one (unsigned) byte, exact up to 24."""
    return i if i < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _long_to_int4(i - _NUM_FREE_VALUES)


def byte4_to_int(b: int) -> int:
    """``SmallFloat.byte4ToInt``."""
    return b if b < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _int4_to_long(b - _NUM_FREE_VALUES)


@dataclass(frozen=True, slots=True)
class FieldStats:
    """Lucene's collection and term statistics of one field."""

    doc_count: int
    total_terms: int
    doc_freq: Counter[str]


def field_stats(segments: Iterable[Segment], field: str) -> FieldStats:
    """Statistics over every document the segments hold, deleted or not (as Lucene counts them until a merge)."""
    doc_count = total = 0
    doc_freq: Counter[str] = Counter()
    for segment in segments:
        for doc in segment.docs:
            words = [t for value in doc.values.get(field, []) for t in tokens(str(value))]
            if words:
                doc_count += 1
                total += len(words)
                doc_freq.update(set(words))
    return FieldStats(doc_count, total, doc_freq)


@dataclass(frozen=True, eq=False)
class Match(Query):
    field: str
    terms: tuple[str, ...]
    require_all: bool = False
    boost: float = 1.0

    def run(self, view: ShardView) -> Matches:
        info = view.index.mapping.field(self.field)
        if info is None or not self.terms:
            return {}
        if info.type != "text":
            raise not_modelled(f"match queries on [{info.type}] fields")
        leaves = view.stats_leaves if view.stats_leaves is not None else view.leaves
        stats = field_stats(leaves, self.field)
        if stats.doc_count == 0:
            return {}
        avgdl = np.float32(stats.total_terms / stats.doc_count)
        weights = {
            term: np.float32(self.boost)
            * np.float32(math.log(1 + (stats.doc_count - stats.doc_freq[term] + 0.5) / (stats.doc_freq[term] + 0.5)))
            for term in set(self.terms)
        }
        found: Matches = {}
        for key, doc in view.docs():
            words = [t for value in doc.values.get(self.field, []) for t in tokens(str(value))]
            freqs = Counter(words)
            if not any(freqs[term] for term in self.terms):
                continue
            if self.require_all and not all(freqs[term] for term in self.terms):
                continue
            length = np.float32(byte4_to_int(int_to_byte4(len(words))))
            norm_inverse = _ONE / (K1 * ((_ONE - B) + B * length / avgdl))
            total = 0.0  # Lucene sums the clauses' float scores in a double
            for term in self.terms:
                freq = freqs[term]
                if freq:
                    weight = weights[term]
                    total += float(weight - weight / (_ONE + np.float32(freq) * norm_inverse))
            found[key] = float(np.float32(total))
        return found


def parse_match(body: dict[str, Any]) -> Match:
    """``{"match": {field: "text" | {"query": ..., "operator": "or" | "and", "boost": ...}}}``."""
    fields = {key: value for key, value in body.items() if key not in ("boost", "_name")}
    if len(fields) != 1:
        raise parsing(f"[match] query doesn't support multiple fields, found {sorted(fields)}")
    ((name, spec),) = fields.items()
    options: dict[str, Any] = spec if isinstance(spec, dict) else {"query": spec}
    for key in options:
        if key not in ("query", "operator", "boost", "_name", "analyzer", "zero_terms_query"):
            if key in ("fuzziness", "minimum_should_match", "lenient", "prefix_length", "max_expansions"):
                raise not_modelled(f"match option [{key}]")
            raise parsing(f"[match] query does not support [{key}]")
    if options.get("analyzer", "standard") != "standard" or options.get("zero_terms_query", "none") != "none":
        raise not_modelled("match analyzers other than standard, zero_terms_query all")
    if "query" not in options or isinstance(options["query"], dict | list) or options["query"] is None:
        raise parsing("No text specified for text query")
    operator = str(options.get("operator", "or")).lower()
    if operator not in ("or", "and"):
        raise parsing(f"Unknown operator [{options.get('operator')}]")
    boost = options.get("boost", 1.0)
    if isinstance(boost, bool) or not isinstance(boost, int | float):
        raise parsing(f"[match] query does not support [boost] value {boost!r}")
    outer = body.get("boost", 1.0)
    if isinstance(outer, bool) or not isinstance(outer, int | float):
        raise parsing(f"[match] query does not support [boost] value {outer!r}")
    return Match(name, tuple(tokens(str(options["query"]))), operator == "and", float(boost) * float(outer))
