"""The web console in a real browser: Debian's Chromium driven by Playwright against a real ``docqa serve``.

One server for the whole suite (the sample corpus, a second store only engineering reads, and a page whose title
and text hold ``<script>`` and a ``javascript:`` link), started once per session on free loopback ports with its
own data directory; tokens are minted by ``docqa token`` in the same data directory. Each test gets a fresh
browser context (its own sessionStorage and cookies) and a page that records console messages and page errors.

Screenshots go to ``tests/browser/artifacts/`` (git-ignored); with ``DOCQA_SCREENSHOTS=1`` the ask and admin
screenshots are also written to ``docs/screenshots/`` for the README and docs/console.md.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
DOCQA = Path(sys.executable).parent / "docqa"
ARTIFACTS = Path(__file__).parent / "artifacts"
SCREENSHOTS = ROOT / "docs" / "screenshots"

#: The page every test about untrusted text looks for: its title and its text carry markup and a javascript: link.
XSS_DOCUMENT = "handbook/badges.md"
XSS_MARKUP = "<script>window.__pwned=1</script>"
XSS_LINK = "[x](javascript:alert(1))"
_XSS_TEXT = f"""# Badges `{XSS_MARKUP}` policy

Lost badges are replaced by the front desk within one day. The old badge page showed `{XSS_MARKUP}` by mistake.
Read the {XSS_LINK} link before you lose your badge; a lost badge must be reported to security at once.
"""

_ENG_ACL = """groups:
  engineering: [user:bob]
documents:
  - match: "**"
    allow: [group:engineering]
"""
_ENG_RUNBOOK = """# Deploy runbook

Deployments to production happen on Tuesdays and Thursdays after the change review.
A failed deployment is rolled back with the release tool within fifteen minutes.
"""


def browser_unavailable() -> str | None:
    """Why the browser suite cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install -e '.[test]')"
    if not DOCQA.exists():
        return f"no docqa console script next to the interpreter ({DOCQA})"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(data_dir: Path, config: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCQA_")}
    env["DOCQA_DATA_DIR"] = str(data_dir)
    if config is not None:
        env["DOCQA_CONFIG"] = str(config)
    return env


def _docqa(data_dir: Path, *args: str, config: Path | None = None) -> str:
    result = subprocess.run(
        [str(DOCQA), *args], env=_env(data_dir, config), cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"docqa {' '.join(args)} failed:\n{result.stderr}"
    return result.stdout


@dataclass
class Server:
    """A running ``docqa serve`` and what the tests need to use it."""

    url: str
    data_dir: Path
    config: Path
    process: subprocess.Popen[bytes]
    log: Path
    _tokens: dict[tuple[str, bool], str] = field(default_factory=dict)

    def token(self, user: str, *, admin: bool = False) -> str:
        key = (user, admin)
        if key not in self._tokens:
            args = ["token", "--user", user, "--ttl", "3600"] + (["--admin"] if admin else [])
            self._tokens[key] = _docqa(self.data_dir, *args, config=self.config).strip()
        return self._tokens[key]


def _start(data_dir: Path, workdir: Path, extra_config: str = "", *, http_port: int | None = None) -> Server:
    config = workdir / "docqa.yaml"
    http_port = http_port or _free_port()
    config.write_text(
        f"server:\n  host: 127.0.0.1\n  http_port: {http_port}\n  grpc_port: {_free_port()}\n{extra_config}",
        encoding="utf-8",
    )
    log = workdir / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(DOCQA), "serve"], env=_env(data_dir, config), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{http_port}"
    deadline = time.monotonic() + 90
    while True:
        if process.poll() is not None:
            raise AssertionError(f"docqa serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(f"{url}/readyz", timeout=2) as reply:
                if reply.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"docqa serve was not ready within 90 s:\n{log.read_text(errors='replace')}")
        time.sleep(0.25)
    running = Server(url=url, data_dir=data_dir, config=config, process=process, log=log)
    _warm_up(running)
    return running


def _warm_up(server: Server) -> None:
    """One question before the first test, so that loading the embedding model is not any test's wait."""
    if "jwks_file" in server.config.read_text(encoding="utf-8"):
        return  # a server that takes the identity provider's tokens only
    body = json.dumps(
        {"query": '{ vectorQuery(storeId: "acme", question: "warm up", performLlmQuery: false) { queryId } }'}
    )
    request = urllib.request.Request(
        f"{server.url}/graphql",
        data=body.encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {server.token('warmup')}"},
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        assert reply.status == 200


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=5)


@pytest.fixture(scope="package")
def indexed_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with two stores: ``acme`` (the sample corpus plus the page with markup in its title and
    text; links to an intranet base URL) and ``eng`` (one runbook only bob, in engineering, may read)."""
    reason = browser_unavailable()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("browser-corpus")
    acme = base / "acme"
    shutil.copytree(ROOT / "examples" / "acme", acme)
    (acme / XSS_DOCUMENT).write_text(_XSS_TEXT, encoding="utf-8")
    eng = base / "eng"
    (eng / "runbooks").mkdir(parents=True)
    (eng / "acl.yaml").write_text(_ENG_ACL, encoding="utf-8")
    (eng / "runbooks" / "deploy.md").write_text(_ENG_RUNBOOK, encoding="utf-8")
    data = base / "data"
    _docqa(data, "index", str(acme), "--store", "acme", "--quiet")
    _docqa(data, "index", str(eng), "--store", "eng", "--quiet")
    _docqa(data, "settings", "set", "acme", "--source-base-url", "https://intranet.example/docs/")
    return data


@pytest.fixture(scope="package")
def server(indexed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The suite's server: bearer tokens only (no dev login, no unauthenticated use)."""
    running = _start(indexed_data, tmp_path_factory.mktemp("serve"))
    yield running
    _stop(running)


@pytest.fixture(scope="package")
def dev_server(indexed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second server, on a copy of the data, with the laptop's dev login on (and so unauthenticated use)."""
    workdir = tmp_path_factory.mktemp("serve-dev")
    data = workdir / "data"
    shutil.copytree(indexed_data, data)
    running = _start(data, workdir, "auth:\n  allow_unauthenticated: true\nweb:\n  dev_login: true\n")
    yield running
    _stop(running)


@dataclass
class SingleSignOn:
    """A server whose sign-in is the stand-in identity provider's (``web.oidc``), and the provider."""

    server: Server
    provider: Any
    provider_url: str


@pytest.fixture(scope="package")
def sso_server(indexed_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SingleSignOn]:
    """A third server, on a copy of the data, that verifies the stand-in provider's RS256 tokens and offers its
    single sign-on (the provider runs on loopback; its token endpoint is the only other origin the CSP allows)."""
    from tests.oidc_standin import AUDIENCE, CLIENT_ID, ISSUER, Provider, start

    workdir = tmp_path_factory.mktemp("serve-sso")
    data = workdir / "data"
    shutil.copytree(indexed_data, data)
    http_port = _free_port()
    provider = Provider(f"http://127.0.0.1:{http_port}", user="sso-user")
    running_provider = start(provider)
    jwks = provider.write_jwks(workdir / "jwks.json")
    config = (
        f"auth:\n  jwks_file: {jwks}\n  issuer: {ISSUER}\n  audience: {AUDIENCE}\n"
        f"web:\n  oidc:\n    authorization_endpoint: {running_provider.base}/authorize\n"
        f"    token_endpoint: {running_provider.base}/token\n    client_id: {CLIENT_ID}\n"
        "    label: Sign in with Acme SSO\n"
    )
    try:
        running = _start(data, workdir, config, http_port=http_port)
    except BaseException:
        running_provider.stop()
        raise
    yield SingleSignOn(running, provider, running_provider.base)
    _stop(running)
    running_provider.stop()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests, closed after them: Playwright's sync API runs an event loop in the
    main thread while it is open, which would break later tests that start their own (asyncio.run)."""
    reason = browser_unavailable()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield launched
        launched.close()


@dataclass
class Watched:
    """A page and what its console said."""

    page: Any
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def csp_violations(self) -> list[str]:
        return [text for _, text in self.console if "Content Security Policy" in text or "Refused to" in text]


@pytest.fixture
def open_page(browser: Any, server: Server) -> Iterator[Callable[..., Watched]]:
    """open_page(base_url=server.url) -> a new page in its own context (fresh sessionStorage and cookies)."""
    contexts: list[Any] = []
    watched: list[Watched] = []

    def make(base_url: str | None = None) -> Watched:
        context = browser.new_context(base_url=base_url or server.url, viewport={"width": 1280, "height": 900})
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        record = Watched(page)
        page.on("console", lambda message: record.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: record.errors.append(str(error)))
        watched.append(record)
        return record

    yield make
    for context in contexts:
        context.close()
    for record in watched:
        assert not record.errors, f"JavaScript errors on the page: {record.errors}"
        assert not record.csp_violations(), f"CSP violations: {record.csp_violations()}"


def shot(page: Any, name: str) -> None:
    """A screenshot per test in tests/browser/artifacts/; the docs' two also in docs/screenshots/ on request."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    if os.environ.get("DOCQA_SCREENSHOTS") == "1" and name in ("ask", "admin"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def sign_in(page: Any, token: str) -> None:
    """Sign in on the ask page by pasting the token, and wait for the ask form."""
    page.goto("/")
    page.locator("#token").fill(token)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.locator("#app").wait_for(state="visible")
    page.locator("#store option").first.wait_for(state="attached")


def ask(page: Any, question: str, *, store: str | None = None) -> None:
    """Ask on the ask page and wait until the whole result (sources included) is shown."""
    if store:
        page.locator("#store").select_option(store)
    previous = page.locator("#result").get_attribute("data-query-id") or ""
    page.locator("#question").fill(question)
    page.locator("#ask-button").click()
    wait_for_result(page, previous)


def wait_for_result(page: Any, previous: str = "") -> None:
    page.wait_for_function(
        "previous => { const r = document.getElementById('result');"
        " return r && r.dataset.queryId && r.dataset.queryId !== previous; }",
        arg=previous,
    )
