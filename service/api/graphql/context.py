"""What every GraphQL resolver gets: the server's services, the request's context, and the one way to run.

``run_resolver`` runs a resolver's blocking work on the server's resolver threads, counts the call by
outcome, and cancels the work at its next check when the HTTP client hangs up.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from strawberry.types import Info

from service.api.errors import mapping_for
from service.api.stream_pool import StreamPool
from service.bootstrap import App
from service.observability.metrics import Metrics
from service.query.cancellation import Cancellation
from service.security.tokens import Authenticator, Identity
from service.usecases.audit import AuditedQueries

T = TypeVar("T")


@dataclass
class GraphQLServices:
    app: App
    authenticator: Authenticator
    queries: AuditedQueries
    metrics: Metrics
    #: The server's stream pool, shared with gRPC (``docqa serve`` passes its own); None: a pool of
    #: ``limits.max_streams`` workers for this HTTP app alone.
    streams: StreamPool | None = None
    #: Where ``askStream`` answers are generated: at most ``limits.max_streams`` at once per pool.
    stream_pool: StreamPool = field(init=False)
    #: Where resolvers run (``server.graphql_workers`` threads, started as needed): not asyncio's default
    #: executor, whose min(32, CPUs + 4) threads would cap concurrent questions at 6 on a 2-core machine.
    resolvers: ThreadPoolExecutor = field(init=False)

    def __post_init__(self) -> None:
        self.stream_pool = self.streams or StreamPool(self.app.settings.limits.max_streams)
        workers = self.app.settings.server.graphql_workers
        self.resolvers = ThreadPoolExecutor(workers, thread_name_prefix="docqa-graphql")


@dataclass
class RequestContext:
    """Per request: the ``authorization`` header, verified on first use."""

    services: GraphQLServices
    authorization: str | None
    _identity: list[Identity] = field(default_factory=list)
    #: Whether the client has hung up (Starlette's ``Request.is_disconnected``); None: not watched.
    disconnected: Callable[[], Awaitable[bool]] | None = None
    #: Set when the client hangs up mid-request: the query, summary or comparison stops at its next check, is
    #: audited CANCELLED and not kept in history.
    cancel: Cancellation = field(default_factory=Cancellation)

    @classmethod
    def of(cls, services: GraphQLServices, request: Any, known: Identity | None) -> RequestContext:
        """The context of an HTTP ``request`` (``known``: the identity the rate limiter verified already)."""
        return cls(services, request.headers.get("authorization"), [known] if known else [], request.is_disconnected)

    def identity(self) -> Identity:
        if not self._identity:
            self._identity.append(self.services.authenticator.identify(self.authorization))
        return self._identity[0]


#: How often a running request looks whether its client is still there (seconds).
DISCONNECT_POLL_S = 0.25


async def _while_connected(context: RequestContext, work: asyncio.Future[T]) -> T:
    """``work``'s result; a client that hangs up first has the request's cancellation set, so the work stops
    at its next check (within a second) instead of running on for nobody."""
    while context.disconnected is not None:
        done, _ = await asyncio.wait({work}, timeout=DISCONNECT_POLL_S)
        if done:
            break
        if await context.disconnected():
            context.cancel.cancel()
            break
    return await work


async def run_resolver(info: Info[RequestContext, None], name: str, work: Callable[[RequestContext], T]) -> T:
    """Run blocking work off the event loop and count the call by outcome."""
    context = info.context
    call = functools.partial(contextvars.copy_context().run, work, context)  # as asyncio.to_thread does
    try:
        result = await _while_connected(
            context, asyncio.get_running_loop().run_in_executor(context.services.resolvers, call)
        )
    except Exception as exc:
        context.services.metrics.requests.labels("graphql", name, mapping_for(exc).grpc_status).inc()
        raise
    context.services.metrics.requests.labels("graphql", name, "OK").inc()
    return result
