"""The console under its Content-Security-Policy, its static files, where the token lives, and the dev login."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Server, ask, browser_unavailable, shot, sign_in

pytestmark = pytest.mark.e2e

_REASON = browser_unavailable()
if _REASON:
    pytest.skip(_REASON, allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

STATIC = Path(__file__).resolve().parents[2] / "service" / "api" / "web" / "static"
CSP_PARTS = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "object-src 'none'",
    "frame-ancestors 'none'",
)


def _assert_hardened(headers: dict[str, str]) -> None:
    csp = headers.get("content-security-policy", "")
    for part in CSP_PARTS:
        assert part in csp, csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp, csp
    assert headers.get("x-frame-options") == "DENY"
    assert headers.get("x-content-type-options") == "nosniff"
    assert headers.get("referrer-policy") == "no-referrer"


def test_both_pages_run_under_the_csp_without_a_violation(open_page: Any, server: Server) -> None:
    user = open_page()
    page = user.page
    reply = page.goto("/")
    assert reply is not None
    _assert_hardened(reply.headers)
    sign_in(page, server.token("bob"))
    ask(page, "How many vacation days do I get?", store="acme")
    page.locator("#answer a.cite").first.click()
    page.locator("#options summary").click()
    page.get_by_role("radio", name="Chosen documents", exact=True).check()
    expect(page.locator("#doc-list li").first).to_be_visible()
    for asset in ("/static/ask.js", "/static/api.js", "/static/app.css"):
        _assert_hardened(page.request.get(asset).headers)
    assert user.csp_violations() == []

    admin = open_page()
    page = admin.page
    sign_in(page, server.token("root", admin=True))
    reply = page.goto("/admin")
    assert reply is not None and reply.status == 200
    _assert_hardened(reply.headers)
    expect(page.locator("#console")).to_be_visible()
    page.get_by_label("Sample question").fill("How many vacation days do I get?")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-result")).to_be_visible()
    page.locator("#preview-level").fill("0.8")
    page.get_by_role("button", name="Calibrate").click()
    expect(page.locator("#calibration-svg")).to_be_visible(timeout=60_000)
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#audit-state")).not_to_be_empty()
    assert admin.csp_violations() == []
    assert not [text for kind, text in user.console + admin.console if kind == "error"], user.console + admin.console


class _Markup(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        if tag == "script" and "src" not in names:
            self.problems.append("inline <script>")
        if tag == "style":
            self.problems.append("<style> block")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.problems.append(f"{name}= on <{tag}>")
            if name in ("href", "src") and value and re.match(r"\s*(javascript|data|https?):", value, re.I):
                self.problems.append(f"{name}={value} on <{tag}> (only the server's own paths)")


def test_the_static_files_need_nothing_the_csp_forbids() -> None:
    pages = sorted(STATIC.glob("*.html"))
    assert {p.name for p in pages} >= {"ask.html", "admin.html", "forbidden.html", "signin-required.html"}
    for path in pages:
        parser = _Markup()
        parser.feed(path.read_text(encoding="utf-8"))
        assert not parser.problems, f"{path.name}: {parser.problems}"
    admin_only = re.compile(r'id="admin-console"|admin\.js')
    for name in ("forbidden.html", "signin-required.html", "ask.html"):
        assert not admin_only.search((STATIC / name).read_text(encoding="utf-8")), name
    for path in sorted(STATIC.glob("*.js")):
        code = path.read_text(encoding="utf-8")
        code = re.sub(r"^\s*//.*$", "", code, flags=re.M)  # comments may name what the code never does
        for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert forbidden not in code, f"{path.name} uses {forbidden}"
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", code), f"{path.name} names a third-party URL"


def test_the_token_lives_in_session_storage_only_and_sign_out_forgets_it(open_page: Any, server: Server) -> None:
    page = open_page().page
    token = server.token("bob")
    sign_in(page, token)
    assert page.evaluate("sessionStorage.getItem('docqa.token')") == token
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("document.cookie") == ""  # the session cookie is HttpOnly
    assert token not in page.url
    cookies = page.context.cookies()
    session = [c for c in cookies if c["name"] == "docqa_session"]
    assert session and session[0]["httpOnly"] and session[0]["sameSite"] == "Strict"

    # A reload keeps the tab signed in; signing out forgets the token and closes the session.
    page.reload()
    expect(page.locator("#user-name")).to_have_text("bob")
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("#signin")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('docqa.token')") is None
    assert not [c for c in page.context.cookies() if c["name"] == "docqa_session"]

    # A bad token is refused with a readable message.
    page.locator("#token").fill("not-a-token")
    page.get_by_role("button", name="Sign in", exact=True).click()
    notice = page.locator("#notice")
    expect(notice).to_contain_text("not accepted")
    assert "{" not in (notice.text_content() or "")


def test_the_dev_login_says_loudly_that_it_is_dev_mode(open_page: Any, server: Server, dev_server: Server) -> None:
    # Off on the suite's server: no banner, no form, and the route is not there.
    page = open_page().page
    page.goto("/")
    page.locator("body[data-ready]").wait_for(state="attached")
    expect(page.locator("#dev-banner")).to_be_hidden()
    expect(page.locator("#dev-form")).to_be_hidden()
    assert page.request.post("/web/dev-login", data={"userId": "eve"}).status == 404

    page = open_page(dev_server.url).page
    page.goto("/")
    banner = page.locator("#dev-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("DEV MODE")
    assert banner.evaluate("b => getComputedStyle(b).backgroundColor") == "rgb(180, 35, 24)"
    expect(page.locator("#dev-form")).to_contain_text("DEV MODE")
    page.get_by_label("User id").fill("dana")
    page.get_by_label("Groups").fill("engineering")
    page.get_by_role("button", name="Dev sign-in").click()
    expect(page.locator("#user-name")).to_have_text("dana")
    expect(page.locator("#app")).to_be_visible()
    expect(banner).to_be_visible()  # still says so while signed in
    assert page.evaluate("sessionStorage.getItem('docqa.token')")
    shot(page, "dev-login")


def test_single_sign_on_signs_in_through_the_identity_provider(open_page: Any, sso_server: Any) -> None:
    watched = open_page(sso_server.server.url)
    page = watched.page
    reply = page.goto("/")
    assert reply is not None
    assert f"connect-src 'self' {sso_server.provider_url};" in reply.headers["content-security-policy"]
    button = page.get_by_role("button", name="Sign in with Acme SSO")
    expect(button).to_be_visible()
    expect(page.locator("#token")).to_be_visible()  # pasting a token still works
    issued = sso_server.provider.tokens_issued
    button.click()
    expect(page.locator("#user-name")).to_have_text("sso-user")
    assert sso_server.provider.tokens_issued == issued + 1
    assert "code=" not in page.url and "state=" not in page.url  # the code never stays in the address bar
    assert page.evaluate("sessionStorage.getItem('docqa.oidc')") is None
    assert page.evaluate("sessionStorage.getItem('docqa.token')")
    expect(page.locator("#store option")).to_have_count(1)
    expect(page.locator("#admin-link")).to_be_hidden()
    assert not watched.csp_violations()
    shot(page, "single-sign-on")
