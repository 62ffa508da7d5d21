"""The reranker port's error (``acl.errors``'s hierarchy; mapped by ``service.api.errors``'s one table)."""

from acl.errors import Unavailable


class RerankerUnavailable(Unavailable):
    """The reranking model cannot be reached, fails, or answers nonsense; the query keeps its retrieval order."""
