"""The admin console's settings form follows the store settings' declarations.

The fields admin.html lays out by hand name declared settings and carry their
bounds; every other declared setting is built by admin.js from
``storeSettingFields``, which serves each declaration over GraphQL (any
verified caller; no caller, no answer).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser

import httpx
import pytest

from service.api.web.pages import STATIC
from service.bootstrap import App
from service.domain.store import STORE_SETTINGS
from tests.integration.server_world import build_world, on_servers, token

pytestmark = pytest.mark.integration

BY_CAMEL = {s.camel: s for s in STORE_SETTINGS}
FIELDS = "{ storeSettingFields { name type minimum maximum choices optional bounds description } }"


class _Form(HTMLParser):
    """The inputs, selects (with their options) and textareas of admin.html's settings form, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, dict[str, str | None]] = {}
        self.options: dict[str, list[str]] = {}
        self._select: str | None = None
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form":
            self._inside = a.get("id") == "settings-form"
        elif self._inside and tag in ("input", "select", "textarea") and a.get("name"):
            self.fields[str(a["name"])] = {**a, "tag": tag}
            if tag == "select":
                self._select = str(a["name"])
                self.options[self._select] = []
        elif tag == "option" and self._select is not None:
            self.options[self._select].append(str(a.get("value")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self._select = None
        elif tag == "form":
            self._inside = False


def _form() -> _Form:
    form = _Form()
    form.feed((STATIC / "admin.html").read_text(encoding="utf-8"))
    return form


def test_the_hand_laid_fields_are_declared_settings_with_their_bounds() -> None:
    form = _form()
    assert form.fields, "admin.html has no settings form"
    for name, field in form.fields.items():
        declared = BY_CAMEL.get(name)
        assert declared is not None, f"admin.html lays out {name}, which no store setting declares"
        if declared.choices:
            assert field["tag"] == "select" and form.options[name] == list(declared.choices)
        elif declared.type in (int, float):
            assert field.get("type") == "number", name
            assert float(field["min"] or "nan") == declared.minimum, name
            if field.get("max") is not None:
                assert float(field["max"] or "nan") == declared.maximum, name


def test_admin_js_lays_out_by_hand_only_what_admin_html_has() -> None:
    script = (STATIC / "admin.js").read_text(encoding="utf-8")
    laid = re.search(r"const FORM = \{(.*?)\};", script, re.DOTALL)
    assert laid is not None
    pairs = dict(re.findall(r"(\w+): \"([\w-]+)\"", laid.group(1)))
    form = _form()
    assert set(pairs) == set(form.fields)
    page = (STATIC / "admin.html").read_text(encoding="utf-8")
    assert all(f'id="{element}"' in page for element in pairs.values())
    assert 'id="settings-more"' in page  # where the other settings' fields go


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[App, str]]:
    app = build_world(tmp_path_factory.mktemp("settings-form"))
    with on_servers(app, with_grpc=False) as servers:
        yield app, f"http://127.0.0.1:{servers.http.port}/graphql"
    app.close()


def test_store_setting_fields_serves_each_declaration(served: tuple[App, str]) -> None:
    app, url = served
    headers = {"authorization": f"Bearer {token(app, 'alice')}"}
    reply = httpx.post(url, json={"query": FIELDS}, headers=headers, timeout=30).json()
    assert "errors" not in reply, reply
    fields = reply["data"]["storeSettingFields"]
    assert [f["name"] for f in fields] == [s.camel for s in STORE_SETTINGS]
    for f, s in zip(fields, STORE_SETTINGS, strict=True):
        assert (f["minimum"], f["maximum"], f["choices"], f["optional"]) == (
            s.minimum,
            s.maximum,
            list(s.choices),
            s.optional,
        )
        assert f["bounds"] == s.bounds and f["description"] == s.description
    assert not set(BY_CAMEL) - {f["name"] for f in fields} - set(_form().fields)  # every setting has a field


def test_store_setting_fields_needs_a_verified_caller(served: tuple[App, str]) -> None:
    _, url = served
    reply = httpx.post(url, json={"query": FIELDS}, timeout=30).json()
    assert reply.get("data") is None and reply["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
