"""Links to sources: under the store's base URL, or the document's own http(s) address; never out of either."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acl.errors import InvalidArgument
from service.domain.links import never_kept, url_key
from service.domain.source_links import check_base_url, document_path, fragment, source_link

BASE = "https://intranet.example/docs"


@pytest.mark.parametrize(
    ("document_id", "source_uri", "anchor", "pages", "expected"),
    [
        ("guide/intro.html", "file:///srv/docs/guide/intro.html", "setup", (), f"{BASE}/guide/intro.html#setup"),
        ("manual.pdf", "file:///srv/docs/manual.pdf", "", (12, 13), f"{BASE}/manual.pdf#page=12"),
        ("manual.pdf", "", "ignored", (13, 12), f"{BASE}/manual.pdf#page=12"),  # the first page, pages win
        ("notes.md", "https://cms.example/notes", "", (), f"{BASE}/notes.md"),  # the base wins over the source
        ("a b/ü?x#y.html", "", "", (), f"{BASE}/a%20b/%C3%BC%3Fx%23y.html"),
        ("guide/intro.html", "", "Install & run/now", (), f"{BASE}/guide/intro.html#Install%20%26%20run%2Fnow"),
    ],
)
def test_links_under_the_base_url(
    document_id: str, source_uri: str, anchor: str, pages: tuple[int, ...], expected: str
) -> None:
    assert source_link(document_id, source_uri, base_url=BASE, anchor=anchor, pages=pages) == expected
    assert source_link(document_id, source_uri, base_url=BASE + "/", anchor=anchor, pages=pages) == expected


@pytest.mark.parametrize(
    ("source_uri", "anchor", "pages", "expected"),
    [
        ("https://cms.example/handbook", "", (), "https://cms.example/handbook"),
        ("https://cms.example/handbook", "leave", (), "https://cms.example/handbook#leave"),
        ("https://cms.example/a.pdf#old", "", (3,), "https://cms.example/a.pdf#page=3"),  # our place replaces theirs
        ("https://cms.example/a?id=7", "s-1", (), "https://cms.example/a?id=7#s-1"),
        ("http://cms.example/a", "", (), "http://cms.example/a"),
        ("file:///srv/docs/a.pdf", "", (3,), None),  # a path of the indexing host: no link for a remote reader
        ("", "x", (), None),
        ("javascript:alert(1)", "", (), None),  # stored before the rule: never shown
        ("data:text/html,<script>", "", (), None),
        ("https://user:pw@cms.example/a", "", (), None),
    ],
)
def test_links_without_a_base_url(source_uri: str, anchor: str, pages: tuple[int, ...], expected: str | None) -> None:
    assert source_link("doc", source_uri, base_url=None, anchor=anchor, pages=pages) == expected


def test_local_callers_may_open_file_paths() -> None:
    assert source_link("a.pdf", "file:///srv/docs/a.pdf", base_url=None, pages=(4,), local=True) == (
        "file:///srv/docs/a.pdf#page=4"
    )
    assert source_link("a.pdf", "file:///srv/docs/a.pdf", base_url=BASE, pages=(4,), local=True) == (
        f"{BASE}/a.pdf#page=4"
    )


@pytest.mark.parametrize("document_id", ["..", "../etc/passwd", "guide/../../secret", "a/..", "", "/", "//", "./."])
def test_a_document_id_that_could_climb_gets_no_base_link(document_id: str) -> None:
    assert document_path(document_id) is None
    assert source_link(document_id, "", base_url=BASE) is None
    # The document's own web address still serves.
    assert source_link(document_id, "https://cms.example/x", base_url=BASE) == "https://cms.example/x"


@pytest.mark.parametrize(
    ("document_id", "expected"),
    [
        ("//evil.example/x", f"{BASE}/evil.example/x"),
        ("https://evil.example/x", f"{BASE}/https%3A/evil.example/x"),
        ("javascript:alert(1)", f"{BASE}/javascript%3Aalert%281%29"),
        ("a\\..\\..\\b", f"{BASE}/a%5C..%5C..%5Cb"),
        ("%2e%2e/x", f"{BASE}/%252e%252e/x"),
        ("./a/./b", f"{BASE}/a/b"),
    ],
)
def test_hostile_document_ids_stay_under_the_base(document_id: str, expected: str) -> None:
    assert source_link(document_id, "", base_url=BASE) == expected


@pytest.mark.parametrize(
    "base",
    ["javascript:alert(1)", "file:///srv", "ftp://h/x", "https://", "https://u:p@h/x", "https://h/x?q=1",
     "https://h/x#f", "https://h/x?", "https://h/../x", "https://h/%2e%2e/x", "https://h/a b", 42],
)  # fmt: skip
def test_a_bad_base_url_is_refused_and_never_used(base: object) -> None:
    with pytest.raises(InvalidArgument):
        check_base_url(base)
    assert source_link("a.html", "https://cms.example/a", base_url=base, anchor="s") == "https://cms.example/a#s"  # type: ignore[arg-type]


def test_check_base_url_normalises() -> None:
    assert check_base_url(None) is None and check_base_url("") is None
    assert check_base_url("https://intranet.example/docs/") == BASE
    assert check_base_url("http://h:8080") == "http://h:8080"


def test_fragment_rules() -> None:
    assert fragment("", ()) == ""
    assert fragment("a", (0, -1)) == "#a"  # no valid page: the anchor
    assert fragment("a", (True, 5)) == "#page=5"  # a bool is no page number
    assert fragment('ä#"<>', ()) == "#%C3%A4%23%22%3C%3E"


# ------------------------------------------------------------------------------------------------ properties
_HOSTILE_PARTS = st.sampled_from(
    ["..", ".", "", "//", "/", "\\", ":", "javascript:", "data:", "https://evil.example", "%2e%2e", "%2E.", "?",
     "#", "@", "\x00", "\n", " ", "\u202e", "\u200b", "．．", "..%2f", "%00", "a", "b.html"]
)  # fmt: skip
_IDS = st.one_of(
    st.text(max_size=40),
    st.lists(st.one_of(_HOSTILE_PARTS, st.text(max_size=6)), max_size=8).map("".join),
    st.lists(st.one_of(_HOSTILE_PARTS, st.text(max_size=6)), max_size=6).map("/".join),
)
_ANCHORS = st.one_of(st.text(max_size=30), st.lists(_HOSTILE_PARTS, max_size=6).map("".join))
_BASES = st.sampled_from([BASE, BASE + "/", "http://h:8080", "https://h.example/a/b/"])


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s not in ("", ".")]


@settings(max_examples=600, deadline=None)
@given(
    document_id=_IDS,
    anchor=_ANCHORS,
    pages=st.lists(st.integers(-3, 5000), max_size=4),
    base=_BASES,
    local=st.booleans(),
)
def test_no_document_id_or_anchor_escapes_the_base(
    document_id: str, anchor: str, pages: list[int], base: str, local: bool
) -> None:
    link = source_link(document_id, "file:///srv/x", base_url=base, anchor=anchor, pages=pages, local=local)
    stem = base.rstrip("/")
    if document_path(document_id) is None:  # no base link: the file path, to a local caller only
        assert ".." in _segments(document_id) or not _segments(document_id)
        assert link == (f"file:///srv/x{fragment(anchor, pages)}" if local else None)
        return
    assert link is not None
    assert link.startswith(stem + "/")
    assert not never_kept(url_key(link))
    # Nothing in the link but the fragment marker itself is read as URL syntax: one "#", no query, no control.
    assert link.count("#") <= 1 and "?" not in link
    assert all(ch.isascii() and ch.isprintable() and ch not in ' \\"<>' for ch in link)
    parts, base_parts = urlsplit(link), urlsplit(stem)
    assert (parts.scheme, parts.netloc) == (base_parts.scheme, base_parts.netloc)
    rest = parts.path[len(base_parts.path) + 1 :].split("/")
    # No dot segment a browser would resolve (it decodes %2e for that), and the path names the document.
    assert all(unquote(s).lower() not in (".", "..") and s.lower().replace("%2e", ".") not in (".", "..") for s in rest)
    assert [unquote(s) for s in rest] == _segments(document_id)
    if parts.fragment:
        valid = [p for p in pages if p >= 1]
        assert parts.fragment == (f"page={min(valid)}" if valid else fragment(anchor, ())[1:])
        assert unquote(parts.fragment) == (f"page={min(valid)}" if valid else anchor)


@settings(max_examples=400, deadline=None)
@given(source_uri=st.one_of(st.text(max_size=40), _HOSTILE_PARTS.map(lambda p: p + "x")), anchor=_ANCHORS)
def test_without_a_base_only_web_addresses_come_out(source_uri: str, anchor: str) -> None:
    link = source_link("doc", source_uri, base_url=None, anchor=anchor)
    if link is not None:
        assert urlsplit(link).scheme in ("http", "https") and not never_kept(url_key(link))
        assert link.split("#", 1)[0] == source_uri.split("#", 1)[0]
