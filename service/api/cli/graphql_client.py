"""A small GraphQL-over-HTTP client for the CLI's ``--server`` mode: one POST, errors as DocQA's own.

Standard library only (``urllib``), so asking a server imports neither the embedder nor the servers'
libraries. A typed GraphQL error (``extensions.code``) becomes the DocQA error the server raised, so
the CLI exits with the same code as it would on the local path; a server that cannot be reached is
``Unavailable`` (exit 6), one that does not answer in time ``DeadlineExceeded`` (exit 7).
"""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from acl.errors import DeadlineExceeded, DocQAError, InvalidArgument, Unavailable
from service.api.errors import error_for_graphql_code

#: The most bytes of a server's answer read (a whole answer with 100 chunks is far below it).
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


def graphql_endpoint(url: str) -> str:
    """``url`` as the GraphQL endpoint: ``http(s)://host[:port]`` gains ``/graphql``; InvalidArgument otherwise."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgument(f"--server must be an http(s) URL such as http://127.0.0.1:8080, got {url!r}")
    if parts.username or parts.password:
        raise InvalidArgument("--server must not carry credentials; give the token with --token or DOCQA_TOKEN")
    path = parts.path if parts.path not in ("", "/") else "/graphql"
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (localhost or a loopback address)."""
    host = urllib.parse.urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def execute(endpoint: str, token: str, document: str, variables: dict[str, Any], *, timeout_s: float) -> Any:
    """The ``data`` of running ``document`` with ``variables`` at ``endpoint`` as the token's bearer."""
    body = json.dumps({"query": document, "variables": variables}).encode()
    request = urllib.request.Request(
        endpoint,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {token}",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            payload = _decode(response.read(MAX_RESPONSE_BYTES + 1), endpoint)
    except urllib.error.HTTPError as exc:  # 4xx/5xx: GraphQL errors may still be in the body
        with exc:
            payload = _decode_error(exc, endpoint)
    except TimeoutError:
        raise DeadlineExceeded(f"the server at {endpoint} did not answer within {timeout_s:g} s") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unavailable(f"cannot reach the server at {endpoint}: {reason}") from None
    errors = payload.get("errors") if isinstance(payload, dict) else None
    if errors:
        raise _error(errors[0])
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        raise Unavailable(f"the server at {endpoint} sent no GraphQL result")
    return payload["data"]


def _decode(raw: bytes, endpoint: str) -> Any:
    if len(raw) > MAX_RESPONSE_BYTES:
        raise Unavailable(f"the server at {endpoint} sent more than {MAX_RESPONSE_BYTES} bytes")
    try:
        return json.loads(raw)
    except ValueError:
        raise Unavailable(f"the server at {endpoint} did not answer with JSON (is it a docqa serve?)") from None


def _decode_error(exc: urllib.error.HTTPError, endpoint: str) -> Any:
    try:
        payload = json.loads(exc.read(MAX_RESPONSE_BYTES))
    except (ValueError, OSError):
        payload = None
    if isinstance(payload, dict) and payload.get("errors"):
        return payload
    message = payload.get("error") if isinstance(payload, dict) else None
    code = {401: "UNAUTHENTICATED", 403: "FORBIDDEN", 404: "NOT_FOUND", 429: "RATE_LIMITED"}.get(exc.code)
    if code is None:
        code = "BAD_USER_INPUT" if 400 <= exc.code < 500 else "UNAVAILABLE"
    return {
        "errors": [
            {"message": message or f"the server at {endpoint} answered HTTP {exc.code}", "extensions": {"code": code}}
        ]
    }


def _error(error: Any) -> DocQAError:
    if not isinstance(error, dict):
        return Unavailable("the server sent a malformed error")
    extensions = error.get("extensions")
    code = extensions.get("code") if isinstance(extensions, dict) else None
    message = error.get("message")
    return error_for_graphql_code(
        code if isinstance(code, str) else "INTERNAL_SERVER_ERROR",
        message if isinstance(message, str) else "the server failed",
    )
