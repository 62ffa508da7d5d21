"""The GraphQL endpoint behind per-caller rate limits (``limits.rate.graphql``).

The limit is decided per HTTP request, before the GraphQL document is read:
a caller over its limit gets HTTP 429 with ``Retry-After`` and a GraphQL error
body whose ``extensions.code`` is ``RATE_LIMITED``, and nothing runs. The
bucket is the verified user's; callers without a valid token share their
network address's bucket (the request itself then fails UNAUTHENTICATED,
unless unauthenticated calls are allowed). The verified identity is handed on
to the request's context, so the token is checked once. With a shared store
(``limits.rate.storage_uri``) that cannot be reached and ``on_store_error:
closed``, the request is answered HTTP 503 with ``Retry-After`` and the code
``RESOURCE_EXHAUSTED``.

The network address is the connection's own; the client a proxy names in
``X-Forwarded-For`` replaces it only when that proxy is one of
``server.forwarded_allow_ips`` (uvicorn rewrites the request's client before
this wrapper sees it; ``service.api.proxy_headers``). With none configured,
a caller cannot pick a fresh address per request to leave its bucket.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from acl.errors import RateLimited, ResourceExhausted, Unauthenticated
from service.api.errors import mapping_for
from service.observability.metrics import Metrics
from service.security.rate_limit import Limiter
from service.security.tokens import Authenticator, Identity

#: Where the verified identity waits for the request's GraphQL context (``request.state``).
IDENTITY_STATE = "docqa_identity"


def verified_identity(request: Request) -> Identity | None:
    """The identity the rate limiter verified for this request, if it did."""
    identity = getattr(request.state, IDENTITY_STATE, None)
    return identity if isinstance(identity, Identity) else None


class RateLimitedGraphQL:
    """ASGI wrapper of the GraphQL app: a POST over its caller's limit is answered 429 and goes no further."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, limiter: Limiter, metrics: Metrics) -> None:
        self.app = app
        self._authenticator = authenticator
        self._limiter = limiter
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            request = Request(scope)
            try:
                if self._limiter.remote:  # a shared store: its round trip waits in a worker thread, not the loop
                    await run_in_threadpool(self._admit, request)
                else:
                    self._admit(request)
            except ResourceExhausted as exc:
                await self._refuse(exc, scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _admit(self, request: Request) -> None:
        try:
            identity: Identity | None = self._authenticator.identify(request.headers.get("authorization"))
        except Unauthenticated:
            identity = None
        if identity is not None:
            setattr(request.state, IDENTITY_STATE, identity)
        self._limiter.check_caller(identity, request.client.host if request.client else "unknown")

    async def _refuse(self, error: ResourceExhausted, scope: Scope, receive: Receive, send: Send) -> None:
        mapping = mapping_for(error)
        self._metrics.requests.labels("graphql", "request", mapping.grpc_status).inc()
        seconds = error.retry_after_header()
        extensions = {"code": mapping.graphql_code, "retryAfter": int(seconds)}
        body = {"errors": [{"message": error.message, "extensions": extensions}]}
        status = 429 if isinstance(error, RateLimited) else 503  # 503: the shared store is away (closed)
        await JSONResponse(body, status_code=status, headers={"Retry-After": seconds})(scope, receive, send)
