"""The one table that maps each DocQA error to a gRPC status, a GraphQL code and a CLI exit code."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypeVar

from acl.errors import (
    Cancelled,
    ConfigurationError,
    DeadlineExceeded,
    DocQAError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RateLimited,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from indexer.errors import LoadError


@dataclass(frozen=True, slots=True)
class ErrorMapping:
    grpc_status: str  # a grpc.StatusCode member name
    graphql_code: str
    exit_code: int


_TABLE: tuple[tuple[type[DocQAError], ErrorMapping], ...] = (
    (InvalidArgument, ErrorMapping("INVALID_ARGUMENT", "BAD_USER_INPUT", 2)),
    (LoadError, ErrorMapping("INVALID_ARGUMENT", "BAD_USER_INPUT", 2)),
    (NotFound, ErrorMapping("NOT_FOUND", "NOT_FOUND", 3)),
    (PermissionDenied, ErrorMapping("PERMISSION_DENIED", "FORBIDDEN", 4)),
    (Unauthenticated, ErrorMapping("UNAUTHENTICATED", "UNAUTHENTICATED", 5)),
    (Unavailable, ErrorMapping("UNAVAILABLE", "UNAVAILABLE", 6)),
    (DeadlineExceeded, ErrorMapping("DEADLINE_EXCEEDED", "DEADLINE_EXCEEDED", 7)),
    (ConfigurationError, ErrorMapping("FAILED_PRECONDITION", "CONFIGURATION_ERROR", 8)),
    # "Try again later": 75 is sysexits' EX_TEMPFAIL; a cancelled call exits as an interrupted one (130).
    (RateLimited, ErrorMapping("RESOURCE_EXHAUSTED", "RATE_LIMITED", 75)),
    (ResourceExhausted, ErrorMapping("RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED", 75)),
    (Cancelled, ErrorMapping("CANCELLED", "CANCELLED", 130)),
)
_INTERNAL = ErrorMapping("INTERNAL", "INTERNAL_SERVER_ERROR", 70)

log = logging.getLogger("docqa.api")

#: All a caller of the servers learns of a configuration error met while serving it.
SERVICE_UNAVAILABLE = "the service is unavailable"


def mapping_for(error: BaseException) -> ErrorMapping:
    """The mapping of the most specific class in the table that ``error`` is an instance of."""
    for cls, mapping in _TABLE:
        if isinstance(error, cls):
            return mapping
    return _INTERNAL


def outcome_of(exc: BaseException) -> str:
    """A failure's audit outcome: the status name of DocQA's error, CANCELLED for an interrupt (Ctrl-C on the
    CLI), INTERNAL for any other."""
    if isinstance(exc, KeyboardInterrupt):
        return "CANCELLED"
    return mapping_for(exc).grpc_status if isinstance(exc, DocQAError) else "INTERNAL"


def error_for_graphql_code(code: str, message: str) -> DocQAError:
    """The error a server reported with GraphQL ``code`` (the table read backwards; the CLI's ``--server`` mode),
    so it maps to the same exit code as on the local path. An unknown code is an internal error."""
    for cls, mapping in _TABLE:
        if mapping.graphql_code == code:
            return cls(message)
    return DocQAError(message)


#: The longest message a caller is told: one that echoes a caller's own junk (a megabyte of store id)
#: is cut, so it still fits a gRPC status (whose details a client takes up to 16 KiB) and a log line.
MAX_MESSAGE_CHARS = 1000


def bounded_message(message: str) -> str:
    """``message``, cut to MAX_MESSAGE_CHARS (ending with "…" when cut)."""
    return message if len(message) <= MAX_MESSAGE_CHARS else message[: MAX_MESSAGE_CHARS - 1] + "…"


def public_message(error: BaseException) -> str:
    """What a caller may be told: our own message (bounded), or nothing about internals."""
    if isinstance(error, DocQAError):
        return bounded_message(error.message)
    return "internal error"


E = TypeVar("E", bound=BaseException)


def for_remote_caller(error: E) -> E | Unavailable:
    """``error`` as a caller of the gRPC or GraphQL server may see it.

    A configuration error (a wrong URL, model id, key file...) is the operator's
    to fix and may name what a caller must not learn: it becomes a neutral
    ``Unavailable`` and its detail goes to the log. The CLI, run by the operator,
    shows configuration errors as they are.
    """
    if isinstance(error, ConfigurationError):
        log.error("configuration error while serving a request: %s", error.message)
        return Unavailable(SERVICE_UNAVAILABLE)
    return error
