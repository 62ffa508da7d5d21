"""GraphiQL at GET /graphql, from the package's own assets: it renders, runs a query with the signed-in tab's
token, and asks no other origin for anything."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.browser.conftest import Server, shot, sign_in

pytestmark = pytest.mark.e2e

from tests.browser.conftest import browser_unavailable  # noqa: E402

_REASON = browser_unavailable()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402


def test_graphiql_runs_from_local_assets_with_the_tabs_token(open_page: Any, server: Server) -> None:
    watched = open_page()
    page = watched.page
    origins: set[str] = set()
    page.on("request", lambda request: origins.add(urlsplit(request.url).netloc))
    sign_in(page, server.token("bob"))  # GraphiQL fills its Authorization header from this tab's token
    reply = page.goto("/graphql")
    assert reply is not None and reply.status == 200
    assert "'unsafe-eval'" not in reply.headers["content-security-policy"]
    expect(page.locator(".graphiql-container")).to_be_visible()
    editor = page.locator(".graphiql-query-editor .CodeMirror").first
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("{ stores { id documents } }")
    page.locator(".graphiql-execute-button").click()
    expect(page.locator(".graphiql-response")).to_contain_text('"id": "acme"')
    shot(page, "graphiql")
    assert origins == {urlsplit(server.url).netloc}, origins
