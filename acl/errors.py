"""The one error hierarchy every DocQA layer raises: its base and the errors of any layer.

It lives in ``acl`` because ``acl`` is the bottom layer that every other
package may import. The errors of one layer's adapters live with that layer and
derive from these: ``indexer.errors`` (the index, the loaders),
``service.generation.errors`` and ``service.ranking.errors`` (the generator and
the reranker). Entry points map each class to a gRPC status, a GraphQL error
code and a CLI exit code in one table (``service.api.errors``). Messages are
written for the caller: they never carry document text, credentials, or a hint
about documents the caller cannot read.
"""

import math


class DocQAError(Exception):
    """Base class of every error DocQA raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(DocQAError):
    """The request is malformed: bad level, empty question, bad id, ..."""


class NotFound(DocQAError):
    """The store or document does not exist, or the caller may not read it."""


class PermissionDenied(DocQAError):
    """The caller is known but lacks the role the operation needs."""


class Unauthenticated(DocQAError):
    """The caller's identity could not be established."""


class Unavailable(DocQAError):
    """A dependency (index, LLM, database) is down after bounded retries."""


class DeadlineExceeded(DocQAError):
    """The caller's deadline passed before the work finished."""


class Cancelled(DocQAError):
    """The caller cancelled the request, or went away, before the answer was complete."""


class ResourceExhausted(DocQAError):
    """More work than the service takes on at once: every streaming slot is busy, or a rate limit is spent.

    ``retry_after_s`` is how long the caller should wait before trying again, when known.
    """

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def retry_after_header(self) -> str:
        """``retry_after_s`` as HTTP's ``Retry-After`` (and gRPC's ``retry-after`` trailer) says it: whole
        seconds, at least one (one when unknown)."""
        return str(max(1, math.ceil(self.retry_after_s or 1.0)))


class RateLimited(ResourceExhausted):
    """The caller made more calls than its rate limit allows; a call is accepted again after ``retry_after_s``."""


class ConfigurationError(DocQAError):
    """Configuration is missing or malformed; the message names the key."""
