"""A fake OpenSearch server with the k-NN plugin, for testing the OpenSearch adapter without a server.

``FakeOpenSearch.start()`` serves HTTP on 127.0.0.1 (a free port) so ``opensearch-py`` talks to it through
its real transport; ``fake.connection_class()`` offers the same fake in-process for tests that may not
open sockets. What it computes, with the plugin source each rule is copied from, is in the modules:
``knn`` (scores, the exact/approximate switch per leaf, scripts) over ``hnsw`` (the stand-in graph),
``queries`` (``bm25`` for ``match``), ``search``, ``documents`` (bulk, realtime gets, by-query), ``storage``
(shards, segments, refresh), ``mapping`` and ``document_parser``, ``settings``, ``routes`` (the endpoints served).

Not modelled, and answered with 400 ``fake_not_modelled_exception`` where a request asks for it: other
spaces than ``cosinesimil`` at query time, radial search, rescoring, quantisation (``mode`` and
``compression_level`` are accepted and echoed but scores are full precision), nested fields, derived
source, scores of leaf queries other than ``knn`` and ``match`` (they score 1.0), aggregations,
highlighting, routing, scroll and PIT, ``filter_path``, tasks. Not modelled silently: merges (segments
only accumulate, so BM25 statistics keep deleted documents longer than a real server's), per-index refresh
intervals other than ``-1`` (one ticker serves all), search-idle shards, replicas (reported as
unassigned: ``_shards.total`` counts them, ``successful`` does not), the real routing hash (crc32 of
``_id`` instead of murmur3), analysers other than a rough standard one (lower-cased word tokens),
the exact error texts of rarely hit paths.
"""

from tests.fakes_opensearch.errors import NOT_MODELLED, OpenSearchError
from tests.fakes_opensearch.knn import LeafSearch
from tests.fakes_opensearch.opensearch_knn import FakeOpenSearch, Request, fake_opensearch

__all__ = ["NOT_MODELLED", "FakeOpenSearch", "LeafSearch", "OpenSearchError", "Request", "fake_opensearch"]
