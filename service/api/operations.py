"""The operations endpoints: /healthz, /livez, /readyz and /metrics.

They are served on the HTTP port, or on an operations listener of their own when ``server.metrics_port``
is set (``build_metrics_app``): nothing of any caller's data is reachable there.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from service.api.graphql.context import GraphQLServices

log = logging.getLogger("docqa.http")


class _NotReady(Exception):
    """A readiness check failed for a reason worth logging (no secrets in it)."""


def health_routes(services: GraphQLServices) -> list[Route]:
    """/healthz and /livez (the process answers) and /readyz (it can serve queries)."""

    async def live(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    def without(problems: Callable[[], list[str]]) -> Callable[[], None]:
        def check() -> None:
            if found := problems():
                raise _NotReady("; ".join(found))

        return check

    async def ready(_: Request) -> Response:
        """Ready when the settings database, the index, the outside group directory (if any) and the language
        model answer (one quick attempt each; the model's check is cached for a minute).

        The body names the failing part only; the reason goes to the log, not to whoever probes.
        """
        checks: dict[str, Callable[[], object]] = {
            # Lambdas: building the repository or the index client may itself fail, and must give 503 too.
            "settings database": lambda: services.app.repository.list_stores(),
            "index": lambda: services.app.index.ping(),
            "generator": without(services.app.generator_problems),
            "group directory": without(services.app.directory_problems),
        }
        for name, check in checks.items():
            try:
                await asyncio.to_thread(check)
            except _NotReady as exc:
                log.warning("not ready: %s: %s", name, exc)
                return JSONResponse({"status": "unavailable", "failing": name}, status_code=503)
            except Exception as exc:
                log.warning("not ready: %s: %s", name, type(exc).__name__)
                return JSONResponse({"status": "unavailable", "failing": name}, status_code=503)
        return JSONResponse({"status": "ready"})

    return [Route("/healthz", live), Route("/livez", live), Route("/readyz", ready)]


def metrics_route(services: GraphQLServices) -> Route:
    """/metrics in Prometheus' text format; only for ``Authorization: Bearer <server.metrics_token>`` when set."""
    token = services.app.settings.server.metrics_token
    expected = f"Bearer {token.get_secret_value()}".encode() if token is not None else None

    async def metrics(request: Request) -> Response:
        if expected is not None:
            given = request.headers.get("authorization", "").encode("utf-8", "surrogateescape")
            if not hmac.compare_digest(given, expected):
                return PlainTextResponse(
                    "/metrics needs the metrics bearer token", status_code=401, headers={"www-authenticate": "Bearer"}
                )
        return Response(services.metrics.exposition(), media_type="text/plain; version=0.0.4; charset=utf-8")

    return Route("/metrics", metrics)


def build_metrics_app(services: GraphQLServices) -> ASGIApp:
    """The ASGI application of the operations port: /metrics and the health endpoints, nothing of callers'."""
    return Starlette(routes=[*health_routes(services), metrics_route(services)])
