"""Security headers on every HTTP response: a strict Content-Security-Policy, no framing, no sniffing.

The console's pages load scripts and styles from this origin only and run no inline code, so the policy
can forbid both: a ``<script>`` that reached a page through a document's text would not run even if it were
ever rendered as markup. GraphiQL's page alone also allows inline styles (its editor sets them).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def console_csp(connect: Sequence[str] = ()) -> str:
    """Everything from this origin only; no inline script or style; never framed. ``connect``: other origins
    the pages may call (the identity provider's token endpoint, for single sign-on)."""
    sources = " ".join(("'self'", *connect))
    return (
        f"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src {sources}; "
        "font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


def graphiql_csp(connect: Sequence[str] = ()) -> str:
    """The console's policy with inline styles allowed: GraphiQL's bundle (React, CodeMirror) sets them; its
    scripts still come from this origin only."""
    return console_csp(connect).replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")


_COMMON = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}


class SecurityHeaders:
    """Adds the security headers to each response ``app`` sends (a header the app set itself is kept)."""

    def __init__(self, app: ASGIApp, *, connect: Sequence[str] = (), graphiql_path: str = "/graphql") -> None:
        self.app = app
        self._graphiql_path = graphiql_path
        self._console = console_csp(connect)
        self._graphiql = graphiql_csp(connect)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        graphiql = scope.get("path") == self._graphiql_path and scope.get("method") == "GET"
        policy = self._graphiql if graphiql else self._console

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers.setdefault("content-security-policy", policy)
                for name, value in _COMMON.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)
