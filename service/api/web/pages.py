"""The console's routes: the ask page, the admin page, their assets, sign-in sessions and the dev login.

The pages are static files; everything they show comes from the GraphQL API, which they call with the
bearer header only. A browser cannot send that header when it navigates, so signing in also sets an
HttpOnly, Secure, SameSite=Strict cookie holding the same token: it is read by ``GET /admin`` alone, which
serves the admin page to administrators, 403 to everyone else (without a byte of the admin page), and 401
to a browser that has not signed in. The API never reads the cookie, so a cross-site request carrying it
can do nothing (CSRF), and page scripts cannot read it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import jwt
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from acl.errors import DocQAError, InvalidArgument
from service.api.errors import public_message
from service.api.graphql.context import GraphQLServices
from service.api.web.static_paths import resolve_asset, route_path
from service.config import LOOPBACK_HOSTS
from service.domain.authorization import AdminOperation, may
from service.security.tokens import Identity, mint_token

log = logging.getLogger("docqa.web")

STATIC = Path(__file__).parent / "static"
VENDOR = Path(__file__).parent / "vendor"
IDE = Path(__file__).parent / "ide"
SESSION_COOKIE = "docqa_session"
#: Browsers keep cookies of at most 4096 bytes, name and attributes included.
MAX_COOKIE_TOKEN_CHARS = 3800
#: Longest life of a dev-login token (an hour, or less where ``auth.max_token_lifetime_s`` says so).
DEV_TOKEN_TTL_S = 3600
_MAX_DEV_GROUPS = 50

#: Assets of the admin page, served to administrators only (like the page).
_ADMIN_ASSETS = frozenset({"admin.js"})

_PAGE_HEADERS = {"cache-control": "no-cache"}
_ADMIN_HEADERS = {"cache-control": "no-store", "vary": "Cookie"}


def console_routes(services: GraphQLServices) -> list[BaseRoute]:
    """The web console's routes, as configured (``web.console``, ``web.graphiql``, ``web.dev_login``)."""
    web = services.app.settings.web
    routes: list[BaseRoute] = [
        Route("/web/config", _config(services), methods=["GET"]),
        Route("/web/session", _session(services), methods=["POST", "DELETE"]),
        Route("/web/dev-login", _dev_login(services), methods=["POST"]),
    ]
    if web.console:
        routes += [
            Route("/", _page("ask.html"), methods=["GET", "HEAD"]),
            Route("/admin", _admin(services), methods=["GET", "HEAD"]),
            Mount("/static", _ConsoleFiles(services), name="static"),
        ]
    if web.graphiql:
        routes += [
            Mount("/vendor", StaticFiles(directory=VENDOR), name="vendor"),
            Mount("/ide", StaticFiles(directory=IDE), name="ide"),
        ]
    return routes


class _ConsoleFiles(StaticFiles):
    """The pages' scripts, styles and images. The pages themselves are served by their routes only, so the
    admin page never leaves through here; the admin page's script goes to administrators only."""

    def __init__(self, services: GraphQLServices) -> None:
        super().__init__(directory=STATIC, check_dir=False)
        self._services = services

    async def get_response(self, path: str, scope: Scope) -> Response:
        # Resolved from the decoded request path itself, not from ``path`` (normalised, "../static/x" kept).
        asset = await asyncio.to_thread(resolve_asset, STATIC, route_path(scope), _ADMIN_ASSETS)
        if asset is None:
            raise HTTPException(404)
        path = asset.name
        if asset.admin_only:
            identity = await _cookie_identity(self._services, Request(scope))
            if not may(identity, AdminOperation.OPEN_ADMIN_CONSOLE):
                raise HTTPException(404)
            response = await super().get_response(path, scope)
            response.headers.update(_ADMIN_HEADERS)
            return response
        return await super().get_response(path, scope)


def graphiql_page() -> str:
    """GraphiQL's page, loading React and GraphiQL from ``/vendor`` (no CDN)."""
    return (IDE / "graphiql.html").read_text(encoding="utf-8")


def _page(name: str) -> Any:
    async def page(_: Request) -> Response:
        return FileResponse(STATIC / name, media_type="text/html; charset=utf-8", headers=_PAGE_HEADERS)

    return page


def _admin(services: GraphQLServices) -> Any:
    async def admin(request: Request) -> Response:
        identity = await _cookie_identity(services, request)
        if identity is None:
            name, status = "signin-required.html", 401
        elif not may(identity, AdminOperation.OPEN_ADMIN_CONSOLE):
            name, status = "forbidden.html", 403
        else:
            name, status = "admin.html", 200
        return FileResponse(
            STATIC / name, status_code=status, media_type="text/html; charset=utf-8", headers=_ADMIN_HEADERS
        )

    return admin


async def _cookie_identity(services: GraphQLServices, request: Request) -> Identity | None:
    """Who signed in in this browser (the session cookie's token, verified as every bearer token is)."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        identity = await asyncio.to_thread(services.authenticator.identify, f"Bearer {token}")
    except DocQAError:
        return None
    return identity if identity.authenticated else None


def _config(services: GraphQLServices) -> Any:
    web = services.app.settings.web

    oidc = None
    if web.oidc is not None:
        oidc = {
            "authorizationEndpoint": web.oidc.authorization_endpoint,
            "tokenEndpoint": web.oidc.token_endpoint,
            "clientId": web.oidc.client_id,
            "scope": web.oidc.scope,
            "token": web.oidc.token,
            "label": web.oidc.label,
        }

    async def config(_: Request) -> Response:
        body = {"console": web.console, "graphiql": web.graphiql, "devLogin": web.dev_login, "oidc": oidc}
        return JSONResponse(body, headers={"cache-control": "no-store"})

    return config


def _session(services: GraphQLServices) -> Any:
    """POST: verify the bearer token and keep it in the HttpOnly cookie; DELETE: forget it."""

    async def session(request: Request) -> Response:
        if request.method == "DELETE":
            response = Response(status_code=204, headers={"cache-control": "no-store"})
            response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="strict")
            return response
        header = request.headers.get("authorization")
        if not header:
            return _refused("send the token as Authorization: Bearer <token>")
        try:
            identity = await asyncio.to_thread(services.authenticator.identify, header)
        except DocQAError as exc:
            return _refused(public_message(exc))
        if not identity.authenticated:
            return _refused("sign in with a token")
        token = header.split(None, 1)[1].strip()
        if len(token) > MAX_COOKIE_TOKEN_CHARS:
            return _refused(
                f"this token is longer than a browser keeps in a cookie ({MAX_COOKIE_TOKEN_CHARS} characters); "
                "ask for a smaller one (fewer claims)"
            )
        expires = _expiry(token)
        body = {
            "userId": identity.user_id,
            "admin": identity.is_admin,
            "historyAuditor": identity.history_auditor,
            "expiresAt": expires,
        }
        response = JSONResponse(body, headers={"cache-control": "no-store"})
        response.set_cookie(
            SESSION_COOKIE,
            token,
            max_age=max(0, expires - int(time.time())),
            path="/",
            secure=True,
            httponly=True,
            samesite="strict",
        )
        return response

    return session


def _expiry(token: str) -> int:
    """The verified token's ``exp`` (its signature was checked by the authenticator already)."""
    claims = jwt.decode(token, options={"verify_signature": False})
    return int(claims["exp"])


def _refused(message: str) -> Response:
    return JSONResponse({"error": message}, 401, headers={"www-authenticate": "Bearer", "cache-control": "no-store"})


def _dev_login(services: GraphQLServices) -> Any:
    """A token for any user, without a credential: only with ``web.dev_login`` (a laptop), logged loudly."""
    settings = services.app.settings

    async def dev_login(request: Request) -> Response:
        if not settings.web.dev_login:
            return JSONResponse({"error": "not found"}, 404)
        refusal = _not_from_this_laptop(request)
        if refusal is not None:
            log.warning("dev login refused: %s", refusal)
            return JSONResponse({"error": refusal}, 403)
        try:
            user, groups, admin = _dev_request(await _json(request))
            ttl = min(DEV_TOKEN_TTL_S, settings.auth.max_token_lifetime_s)
            token = await asyncio.to_thread(mint_token, settings, user, groups=groups, admin=admin, ttl_s=ttl)
        except DocQAError as exc:
            return JSONResponse({"error": public_message(exc)}, 400)
        log.warning("DEV LOGIN (web.dev_login): minted a token for user %r (admin=%s) with no credential", user, admin)
        return JSONResponse({"token": token, "devMode": True}, headers={"cache-control": "no-store"})

    return dev_login


def _not_from_this_laptop(request: Request) -> str | None:
    """Why a dev-login request may come from another site (DNS rebinding, a cross-site form); None if it is
    the console's own: addressed to a loopback name, sent as JSON (a cross-site page cannot send that without
    a preflight this server never grants), and from this origin when the browser names one."""
    host = request.url.hostname or ""
    if host.strip("[]") not in LOOPBACK_HOSTS:
        return "the dev login answers only on a loopback address (127.0.0.1, localhost)"
    if request.headers.get("content-type", "").split(";", 1)[0].strip().lower() != "application/json":
        return "send the dev login as application/json"
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        return "the dev login answers only to this console's own page"
    return None


async def _json(request: Request) -> object:
    try:
        return await request.json()
    except ValueError:
        raise InvalidArgument("the request body is not valid JSON") from None


def _dev_request(body: object) -> tuple[str, list[str], bool]:
    if not isinstance(body, dict):
        raise InvalidArgument('send {"userId": "...", "groups": [...], "admin": false}')
    user, groups, admin = body.get("userId"), body.get("groups") or [], body.get("admin", False)
    if not isinstance(user, str) or not user.strip():
        raise InvalidArgument("userId must be a user id")
    if not isinstance(groups, list) or len(groups) > _MAX_DEV_GROUPS or not all(isinstance(g, str) for g in groups):
        raise InvalidArgument(f"groups must be a list of at most {_MAX_DEV_GROUPS} group ids")
    if not isinstance(admin, bool):
        raise InvalidArgument("admin must be true or false")
    return user.strip(), [g.strip() for g in groups if g.strip()], admin
