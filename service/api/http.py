"""The HTTP side (uvicorn): GraphQL and GraphiQL at /graphql, the web console, SCIM at /scim/v2, health, /metrics.

With ``server.metrics_port`` set, /metrics moves to an operations listener of its own (with the health
endpoints, for probes and Prometheus); with ``server.metrics_token`` set, /metrics wants that bearer token.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from cross_web import HTTPException
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from strawberry.asgi import GraphQL
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.subscriptions import GRAPHQL_SSE_PROTOCOL
from strawberry.types import ExecutionResult

from acl.errors import ConfigurationError
from graphql import GraphQLError, OperationType, get_operation_ast, parse
from service.api.errors import bounded_message
from service.api.graphql.context import GraphQLServices, RequestContext
from service.api.graphql.rate_limit import RateLimitedGraphQL, verified_identity
from service.api.graphql.schema import build_schema, public_error
from service.api.operations import build_metrics_app, health_routes, metrics_route
from service.api.proxy_headers import proxy_options
from service.api.scim import scim_routes
from service.api.tls import describe, uvicorn_tls_options
from service.api.web.headers import SecurityHeaders
from service.api.web.pages import console_routes, graphiql_page
from service.config import LOOPBACK_HOSTS
from service.domain.limits import is_valid_unicode
from service.security.shared_rate_limit import limiter_for

log = logging.getLogger("docqa.http")

#: A JSON escape of a UTF-16 surrogate (\ud800-\udfff): half of a pair, or a lone one.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _DocQAGraphQL(GraphQL[RequestContext, None]):
    """strawberry's ASGI view; a request that is not a GraphQL request is the client's error, answered as JSON.

    Its body must be a JSON object (a list would be a batch, which is off); JSON
    nested past the parser's recursion limit, malformed JSON, another content
    type: 400 (415 for the content type) with ``{"errors": [{"message": ...}]}``,
    counted as ``docqa_requests_total{interface="graphql",method="unparsed"}``,
    never a 500 or a traceback. A client gone mid-body is one debug line.
    """

    def __init__(self, services: GraphQLServices, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._services = services

    async def get_context(self, request: Any, response: Any) -> RequestContext:
        known = verified_identity(request)  # verified already by the rate limiter
        return RequestContext.of(self._services, request, known)

    async def execute_operation(
        self,
        request: Any,
        request_adapter: Any,
        request_data: Any,
        context: RequestContext,
        root_value: Any,
        sub_response: Any,
    ) -> Any:
        plain = isinstance(request_data, GraphQLRequestData) and request_data.protocol == "http"
        if plain and _is_subscription(request_data):
            raise HTTPException(400, "a subscription is answered as server-sent events: send Accept: text/event-stream")
        return await super().execute_operation(
            request, request_adapter, request_data, context, root_value, sub_response
        )

    async def process_result(self, request: Any, result: ExecutionResult) -> GraphQLHTTPResponse:
        """Every error leaves public: the schema's extension maps those of queries and mutations; results sent as
        server-sent events (askStream, or any operation asked for with ``Accept: text/event-stream``) pass here
        without it."""
        if result.errors:
            result.errors = [public_error(e) for e in result.errors]
        return await super().process_result(request, result)

    async def render_graphql_ide(self, request: Any) -> Response:
        """GraphiQL from the package's own assets (strawberry's page would load them from a CDN)."""
        return HTMLResponse(graphiql_page(), headers={"cache-control": "no-cache"})

    def decode_json(self, data: str | bytes) -> object:
        try:
            # JSON between systems is UTF-8 (RFC 8259); json.loads would also guess UTF-16 and UTF-32.
            text = data.decode("utf-8") if isinstance(data, bytes) else data
            value = json.loads(text)
        except RecursionError:
            raise HTTPException(400, "the request body is JSON nested too deeply") from None
        except ValueError:  # malformed JSON, or bytes that are not UTF-8 (UnicodeDecodeError is a ValueError)
            raise HTTPException(400, "the request body is not valid JSON in UTF-8") from None
        if not isinstance(value, dict | list):  # a list is a batch: strawberry refuses it (batching is off)
            raise HTTPException(400, 'the request body must be a JSON object: {"query": "...", "variables": {...}}')
        # Escapes of a surrogate pair decode to one character; a lone one to none, which no database stores.
        if _SURROGATE_ESCAPE.search(text) and not is_valid_unicode(json.dumps(value, ensure_ascii=False)):
            raise HTTPException(400, "the request body is not valid Unicode text (a lone surrogate)")
        return value

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            if request.method == "POST" and _media_type(request) != "application/json":
                raise HTTPException(415, "send the GraphQL request as application/json")
            response = await self.run(request)
        except HTTPException as exc:
            self._services.metrics.requests.labels("graphql", "unparsed", "INVALID_ARGUMENT").inc()
            response = _error(exc.reason, exc.status_code)
        except ClientDisconnect:
            log.debug("client went away before its request body arrived")
            return
        await response(scope, receive, send)


def _is_subscription(data: GraphQLRequestData) -> bool:
    """Whether the operation to run is a subscription (a document that does not parse is left to the schema)."""
    if not data.query or "subscription" not in data.query:
        return False
    try:
        operation = get_operation_ast(parse(data.query), data.operation_name)
    except GraphQLError:
        return False
    return operation is not None and operation.operation == OperationType.SUBSCRIPTION


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _error(message: str, status: int) -> Response:
    """A request the transport refused, in GraphQL's error shape."""
    body = {"errors": [{"message": bounded_message(message), "extensions": {"code": "BAD_REQUEST"}}]}
    return JSONResponse(body, status)


class _BodyLimit:
    """Refuses request bodies larger than ``limit`` bytes with 413 before the app reads them."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _error("request too large", 413)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _error("request too large", 413)(scope, receive, send)
        except ClientDisconnect:  # a route other than /graphql that read the body
            log.debug("client went away before its request body arrived")


class _TooLarge(Exception):
    pass


def build_http_app(services: GraphQLServices) -> ASGIApp:
    """The ASGI application of the HTTP port (/metrics only when no metrics port is configured)."""
    config = services.app.settings.server
    schema = build_schema(config.graphql_max_depth, config.graphql_max_tokens, config.graphql_max_aliases)
    ide = "graphiql" if services.app.settings.web.graphiql else None
    # Subscriptions (askStream) as server-sent events on POST only: no WebSocket endpoint to secure separately.
    graphql: ASGIApp = _DocQAGraphQL(
        services,
        schema=schema,
        graphql_ide=ide,
        allow_queries_via_get=False,
        subscription_protocols=(GRAPHQL_SSE_PROTOCOL,),
    )
    rates = services.app.settings.limits.rate
    limiter = limiter_for(rates, "graphql", services.metrics.rate_limit_store_failures.labels("graphql").inc)
    if limiter is not None:
        graphql = RateLimitedGraphQL(graphql, services.authenticator, limiter, services.metrics)
    metrics = [metrics_route(services)] if config.metrics_port is None else []
    routes = [*health_routes(services), *metrics, Route("/graphql", graphql, methods=["GET", "POST"])]
    app = Starlette(routes=[*routes, *console_routes(services), *scim_routes(services.app)])
    oidc = services.app.settings.web.oidc
    limited = _BodyLimit(app, config.max_message_bytes)
    return SecurityHeaders(limited, connect=() if oidc is None else (oidc.token_origin,))


@dataclass
class HttpServer:
    """uvicorn serving the HTTP app in a background thread; ``port`` is the one bound."""

    server: Any
    thread: threading.Thread
    port: int

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_http(services: GraphQLServices, host: str | None = None, port: int | None = None) -> HttpServer:
    """Start uvicorn on ``host:port`` (defaults from configuration), over TLS when ``server.tls`` names a
    certificate, and wait until it listens."""
    config = services.app.settings.server
    port = config.http_port if port is None else port
    host = host or config.host
    if services.app.settings.web.dev_login and host not in LOOPBACK_HOSTS:
        raise ConfigurationError(f"web.dev_login is on: serve on a loopback address, not {host}")
    options = {**uvicorn_tls_options(config.tls), **proxy_options(config.forwarded_allow_ips)}
    server = _serve(build_http_app(services), host, port, "docqa-http", options)
    metrics = "" if config.metrics_port is not None else ", /metrics"
    log.info("HTTP (GraphQL%s, health) listening on port %d (%s)", metrics, server.port, describe(config.tls, "http"))
    return server


def start_metrics(services: GraphQLServices, host: str | None = None, port: int | None = None) -> HttpServer:
    """Start the operations listener (plain HTTP: /metrics and health) on ``server.metrics_port`` unless told
    another port."""
    config = services.app.settings.server
    if port is None:
        if config.metrics_port is None:
            raise ValueError("server.metrics_port is not set")
        port = config.metrics_port
    server = _serve(build_metrics_app(services), host or config.host, port, "docqa-metrics", proxy_options(()))
    log.info("metrics and health listening on port %d (plaintext)", server.port)
    return server


def _serve(app: ASGIApp, host: str, port: int, name: str, options: dict[str, Any]) -> HttpServer:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off", **options))
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise OSError(f"the HTTP server could not start on {host}:{port}")
        thread.join(0.02)
    return HttpServer(server, thread, server.servers[0].sockets[0].getsockname()[1])
