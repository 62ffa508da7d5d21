"""The console's static files are resolved after percent-decoding and never leave their folder; the admin
page's script goes to administrators only, however its path is spelled: encoded slashes and backslashes,
dot segments, double encoding, letter case, trailing junk. Requests are written on a raw socket, so every
path reaches the server exactly as spelled here (an HTTP client would normalise some of them)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from service.api.web.pages import SESSION_COOKIE, STATIC
from tests.integration.server_world import build_world, on_servers, token

pytestmark = pytest.mark.integration

ADMIN_SCRIPT = (STATIC / "admin.js").read_bytes()
ADMIN_PAGE = (STATIC / "admin.html").read_bytes()

SPELLINGS = [
    "/static/admin.js",
    "/static/..%2fstatic/admin.js",
    "/static/..%2Fstatic%2Fadmin.js",
    "/static/%2e%2e%2fstatic%2fadmin.js",
    "/static/../static/admin.js",
    "/static/./admin.js",
    "/static/%2e/admin.js",
    "/static/.%2fadmin.js",
    "/static//admin.js",
    "/static/%2fadmin.js",
    "/static/..%5cstatic%5cadmin.js",
    "/static/.%5cadmin.js",
    "/static/%5cadmin.js",
    "/static/%252e%252e%252fstatic%252fadmin.js",
    "/static/%2561dmin.js",
    "/static/ADMIN.JS",
    "/static/Admin.js",
    "/static/admin.js%00",
    "/static/admin.js/",
    "/static/admin.js/.",
    "/static/admin.js%2f.",
    "/static/api.js/../admin.js",
    "/static/api.js%2f..%2fadmin.js",
    "/static/nope/..%2f..%2fstatic/admin.js",
]
OUTSIDE = [
    "/static/..%2fpages.py",
    "/static/..%2f..%2fweb%2fpages.py",
    "/static/%2e%2e/pages.py",
    "/static/..%5cpages.py",
    "/static/../pages.py",
    "/static/%2fetc%2fpasswd",
    "/static/..%2f..%2f..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
]
PAGES = ["/static/admin.html", "/static/..%2fstatic/admin.html", "/static/ADMIN.HTML", "/static/admin.html%2f."]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, int]]:
    app = build_world(tmp_path_factory.mktemp("static-spellings"))
    with on_servers(app, with_grpc=False) as served:
        yield app, served.http.port
    app.close()


def get(port: int, path: str, cookie: str | None = None) -> tuple[int, bytes]:
    """GET ``path`` verbatim; the status and the body."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
    if cookie is not None:
        head += f"Cookie: {SESSION_COOKIE}={cookie}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall((head + "\r\n").encode("latin-1"))
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    _, _, body = rest.partition(b"\r\n\r\n")
    return int(status_line.split()[1]), body


@pytest.mark.parametrize("path", SPELLINGS)
@pytest.mark.parametrize("who", ["anonymous", "alice"])
def test_the_admin_script_goes_to_nobody_else_however_spelled(world: tuple[Any, int], path: str, who: str) -> None:
    app, port = world
    cookie = None if who == "anonymous" else token(app, who)
    status, body = get(port, path, cookie)
    assert status != 200 and ADMIN_SCRIPT[:200] not in body, f"{path}: admin script served to {who}"


def test_an_administrator_gets_it_under_its_name_only(world: tuple[Any, int]) -> None:
    app, port = world
    admin = token(app, "root", admin=True)
    assert get(port, "/static/admin.js", admin) == (200, ADMIN_SCRIPT)
    for path in SPELLINGS[1:]:
        status, body = get(port, path, admin)
        assert status == 404 and ADMIN_SCRIPT[:200] not in body, path


@pytest.mark.parametrize("path", OUTSIDE)
def test_nothing_outside_the_folder_is_served(world: tuple[Any, int], path: str) -> None:
    status, body = get(world[1], path, token(world[0], "root", admin=True))
    assert status == 404 and b"import" not in body and b"root:" not in body, path


@pytest.mark.parametrize("path", PAGES)
def test_the_admin_page_never_leaves_through_static(world: tuple[Any, int], path: str) -> None:
    status, body = get(world[1], path, token(world[0], "root", admin=True))
    assert status == 404 and ADMIN_PAGE[:200] not in body, path


@pytest.mark.parametrize("path", ["/static/api.js", "/static/app.css", "/static/favicon.svg"])
def test_public_assets_are_served_to_anybody(world: tuple[Any, int], path: str) -> None:
    status, body = get(world[1], path)
    assert status == 200 and body == (STATIC / path.rsplit("/", 1)[1]).read_bytes()
