"""Errors the fake answers with, in OpenSearch's shape: ``{"error": {...}, "status": N}``."""

from __future__ import annotations

from typing import Any

#: The error type of everything the real server does but the fake does not model.
NOT_MODELLED = "fake_not_modelled_exception"
#: Node id the fake reports in shard failures.
NODE_ID = "fake-node-0000000000"


class OpenSearchError(Exception):
    """An error answer: status, ``type``, ``reason`` and any extra fields of the cause."""

    def __init__(self, status: int, type_: str, reason: str, **extra: Any) -> None:
        super().__init__(f"{status} {type_}: {reason}")
        self.status = status
        self.type = type_
        self.reason = reason
        self.extra = extra
        #: The ``root_cause`` list when it is not just this error (a wrapper such as a search-phase failure).
        self.root_causes: list[dict[str, Any]] | None = None

    def cause(self) -> dict[str, Any]:
        """The error object without ``root_cause`` (as it appears inside another error)."""
        return {"type": self.type, "reason": self.reason, **self.extra}

    def body(self) -> dict[str, Any]:
        """The whole answer body."""
        roots = self.root_causes if self.root_causes is not None else [self.cause()]
        return {"error": {"root_cause": roots, **self.cause()}, "status": self.status}


def bad_request(reason: str, type_: str = "illegal_argument_exception", **extra: Any) -> OpenSearchError:
    return OpenSearchError(400, type_, reason, **extra)


def parsing(reason: str) -> OpenSearchError:
    return OpenSearchError(400, "parsing_exception", reason)


def not_modelled(what: str) -> OpenSearchError:
    """The real server may accept this, but the fake would only guess: fail loudly instead."""
    return OpenSearchError(400, NOT_MODELLED, f"the fake OpenSearch does not model {what}")


def index_not_found(name: str, reason: str | None = None) -> OpenSearchError:
    return OpenSearchError(
        404,
        "index_not_found_exception",
        reason or f"no such index [{name}]",
        index=name,
        **{"resource.type": "index_or_alias", "resource.id": name, "index_uuid": "_na_"},
    )


def script_error(script: str, lang: str, cause: OpenSearchError) -> OpenSearchError:
    """A script that failed while running, as Painless reports it."""
    return OpenSearchError(
        400,
        "script_exception",
        "runtime error",
        script_stack=[script],
        script=script,
        lang=lang,
        caused_by=cause.cause(),
    )


def all_shards_failed(failures: list[tuple[str, int, OpenSearchError]]) -> OpenSearchError:
    """``search_phase_execution_exception``: every shard failed, each with ``(index, shard, error)``."""
    first = failures[0][2]
    distinct: dict[tuple[str, str], dict[str, Any]] = {}
    for index, _, error in failures:
        distinct.setdefault((index, error.reason), {**error.cause(), "index": index})
    error = OpenSearchError(
        first.status,
        "search_phase_execution_exception",
        "all shards failed",
        phase="query",
        grouped=True,
        failed_shards=shard_failures(failures),
        caused_by=first.cause(),
    )
    error.root_causes = list(distinct.values())
    return error


def shard_failures(failures: list[tuple[str, int, OpenSearchError]]) -> list[dict[str, Any]]:
    """The ``failures`` list of ``_shards`` (and ``failed_shards``), one per failed shard."""
    return [
        {"shard": shard, "index": index, "node": NODE_ID, "reason": error.cause()} for index, shard, error in failures
    ]
