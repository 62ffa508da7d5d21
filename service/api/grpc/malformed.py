"""Bytes that are not the method's request message are the client's error: INVALID_ARGUMENT, counted.

grpcio parses a request before any servicer code runs; when the bytes do not
parse it logs ``Exception deserializing message!`` with a traceback at ERROR
and answers INTERNAL — a traceback per unauthenticated request, and the
client told the server failed. ``MalformedRequests`` gives every method of the
server (DocQA's, health, reflection) a parser that never raises: bytes that do
not parse become ``MALFORMED``, and the method answers INVALID_ARGUMENT before
its code runs (a request stream: when the bad message is reached), with one
debug line and one count in ``docqa_requests_total{code="INVALID_ARGUMENT"}``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any

import grpc

from acl.errors import InvalidArgument
from service.observability.metrics import Metrics

log = logging.getLogger("docqa.grpc")

#: What a client is told; the parser's own message names protobuf internals.
MESSAGE = "malformed request: the message is not a valid {}"


class _Malformed:
    """Stands for a request whose bytes did not parse."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MALFORMED"


MALFORMED = _Malformed()


class MalformedRequest(InvalidArgument):
    """A message of a request stream did not parse (raised where the servicer reads it)."""


def _message_name(deserializer: Callable[[bytes], Any]) -> str:
    owner = getattr(deserializer, "__self__", None)  # the generated stubs pass Message.FromString
    descriptor = getattr(owner, "DESCRIPTOR", None)
    return str(getattr(descriptor, "full_name", "request message"))


def _tolerant(deserializer: Callable[[bytes], Any], method: str) -> Callable[[bytes], Any]:
    def parse(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as exc:  # protobuf's DecodeError, or anything a parser may raise on junk
            log.debug("malformed request to %s (%d bytes): %s", method, len(data), type(exc).__name__)
            return MALFORMED

    return parse


def _checked(requests: Iterator[Any], message: str) -> Iterator[Any]:
    for request in requests:
        if request is MALFORMED:
            raise MalformedRequest(message)
        yield request


def _keep_flags(wrapper: Any, behavior: Any) -> Any:
    # grpcio reads these from the behavior itself (the health service's non-blocking Watch).
    for flag in ("experimental_non_blocking", "experimental_thread_pool"):
        if hasattr(behavior, flag):
            setattr(wrapper, flag, getattr(behavior, flag))
    return wrapper


class MalformedRequests(grpc.ServerInterceptor):  # type: ignore[misc]
    """The server interceptor that turns unparsable requests into INVALID_ARGUMENT."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        #: Wrapped handlers by method: the server's handlers are registered once, so each is wrapped once,
        #: not on every call (two threads wrapping the same method at once build equal wrappers).
        self._wrapped: dict[str, Any] = {}

    def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        handler = continuation(details)
        if handler is None or handler.request_deserializer is None:
            return handler
        full = str(details.method)
        wrapped = self._wrapped.get(full)
        if wrapped is None:
            wrapped = self._wrapped[full] = self._wrap(handler, full)
        return wrapped

    def _wrap(self, handler: Any, full: str) -> Any:
        name = full.rsplit("/", 1)[-1]
        message = MESSAGE.format(_message_name(handler.request_deserializer))

        def refuse(context: grpc.ServicerContext) -> None:
            self._metrics.requests.labels("grpc", name, "INVALID_ARGUMENT").inc()
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, message)

        changes: dict[str, Any] = {"request_deserializer": _tolerant(handler.request_deserializer, full)}
        if handler.unary_unary is not None or handler.unary_stream is not None:
            kind = "unary_unary" if handler.unary_unary is not None else "unary_stream"
            behavior = getattr(handler, kind)

            @functools.wraps(behavior)
            def unary(request: Any, context: grpc.ServicerContext, *more: Any) -> Any:
                if request is MALFORMED:
                    refuse(context)
                return behavior(request, context, *more)

            changes[kind] = _keep_flags(unary, behavior)
        elif handler.stream_unary is not None:
            many_to_one = handler.stream_unary

            @functools.wraps(many_to_one)
            def stream_unary(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
                try:
                    return many_to_one(_checked(requests, message), context)
                except MalformedRequest:  # a servicer that does not map our errors (DocQA's do)
                    refuse(context)

            changes["stream_unary"] = stream_unary
        elif handler.stream_stream is not None:
            many_to_many = handler.stream_stream

            @functools.wraps(many_to_many)
            def stream_stream(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                try:
                    yield from many_to_many(_checked(requests, message), context)
                except MalformedRequest:  # e.g. server reflection
                    refuse(context)

            changes["stream_stream"] = stream_stream
        return handler._replace(**changes)
