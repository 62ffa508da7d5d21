"""What every gRPC servicer shares: the caller's identity, rate limits, error mapping, deadlines, metrics."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from acl.errors import DeadlineExceeded, DocQAError, ResourceExhausted, Unauthenticated
from service.api.errors import for_remote_caller, mapping_for, public_message
from service.api.grpc.stubs import Stubs
from service.api.stream_pool import StreamPool
from service.bootstrap import App
from service.observability.metrics import Metrics
from service.query.cancellation import Cancellation
from service.security.rate_limit import Limiter
from service.security.tokens import Authenticator, Identity
from service.usecases.audit import AuditedQueries

log = logging.getLogger("docqa.grpc")

F = TypeVar("F", bound=Callable[..., Any])
#: The identity verified for the call being served (gRPC runs each call in a context of its own).
_VERIFIED: ContextVar[tuple[grpc.ServicerContext, Identity] | None] = ContextVar("docqa_grpc_identity", default=None)


@dataclass
class Services:
    """The application as the servicers see it."""

    app: App
    stubs: Stubs
    authenticator: Authenticator
    queries: AuditedQueries
    metrics: Metrics
    #: Streaming answers in progress, bounded by ``limits.max_streams``.
    streams: StreamPool
    #: Calls per caller (``limits.rate.grpc``); None = no limit.
    limiter: Limiter | None = None

    def identity(self, context: grpc.ServicerContext) -> Identity:
        """The verified caller of this call (from the ``authorization`` metadata only)."""
        verified = _VERIFIED.get()
        if verified is not None and verified[0] is context:
            return verified[1]
        values = [v for k, v in context.invocation_metadata() if k == "authorization"]
        if len(values) > 1:
            raise Unauthenticated("send exactly one authorization header")
        value = values[0] if values else None
        if isinstance(value, bytes):  # pragma: no cover - only -bin keys carry bytes
            raise Unauthenticated("invalid token")
        identity = self.authenticator.identify(value)
        _VERIFIED.set((context, identity))
        return identity

    def admit(self, context: grpc.ServicerContext) -> None:
        """RateLimited when this call's caller has spent its rate limit.

        The bucket is the verified user's; callers without a valid token share
        their network address's (the call itself then fails UNAUTHENTICATED,
        unless unauthenticated calls are allowed). Nothing is read before this.
        """
        if self.limiter is None:
            return
        try:
            identity = self.identity(context)
        except Unauthenticated:
            identity = None
        self.limiter.check_caller(identity, _address(context.peer()))


def _address(peer: str) -> str:
    """The address of a gRPC peer without scheme and port (``ipv4:10.0.0.7:51234`` → ``10.0.0.7``,
    ``ipv6:[fd00::7]:51234`` → ``[fd00::7]``); a peer of another kind as written."""
    scheme, _, rest = peer.partition(":")
    if scheme not in ("ipv4", "ipv6"):
        return peer
    host, _, port = rest.rpartition(":")
    return host if host and port.isdigit() else rest


def check_deadline(context: grpc.ServicerContext) -> None:
    """DeadlineExceeded when the client's deadline has already passed (no work is started for it)."""
    remaining = context.time_remaining()
    if remaining is not None and remaining <= 0:
        raise DeadlineExceeded("the deadline passed before the request could be answered")


def call_cancellation(context: grpc.ServicerContext) -> Cancellation:
    """A cancellation set when the call ends before its work does (the client cancelled or went away) and
    expiring at the call's deadline: what a unary call hands its long work, so that it stops with the call."""
    cancel = Cancellation.within(context.time_remaining())
    if not context.add_callback(cancel.cancel):
        cancel.cancel()  # already over
    return cancel


def _status(error: BaseException) -> tuple[grpc.StatusCode, str]:
    error = for_remote_caller(error)
    mapping = mapping_for(error)
    if mapping.grpc_status == "INTERNAL":
        log.error("internal error", exc_info=error)
    return grpc.StatusCode[mapping.grpc_status], public_message(error)


def rpc(method: F) -> F:
    """Wrap a servicer method: map our errors to status codes, hide the rest, count the call.

    ``context.abort`` is called outside the ``try`` so its own exception is never re-mapped.
    """
    name = method.__name__

    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def streaming(self: Any, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            failure: BaseException | None = None
            try:
                check_deadline(context)
                self.services.admit(context)
                yield from method(self, request, context)
            except (DocQAError, Exception) as exc:
                failure = exc
            _finish(self.services.metrics, name, context, failure)

        return streaming  # type: ignore[return-value]

    @functools.wraps(method)
    def unary(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        failure: BaseException | None = None
        result: Any = None
        try:
            check_deadline(context)
            self.services.admit(context)
            result = method(self, request, context)
        except (DocQAError, Exception) as exc:
            failure = exc
        _finish(self.services.metrics, name, context, failure)
        return result

    return unary  # type: ignore[return-value]


def _finish(metrics: Metrics, name: str, context: grpc.ServicerContext, failure: BaseException | None) -> None:
    if failure is None:
        metrics.requests.labels("grpc", name, "OK").inc()
        return
    code, message = _status(failure)
    metrics.requests.labels("grpc", name, code.name).inc()
    if isinstance(failure, ResourceExhausted) and failure.retry_after_s is not None:
        context.set_trailing_metadata((("retry-after", failure.retry_after_header()),))
    context.abort(code, message)
