"""Section anchors of HTML and Markdown headings, and permalink glyphs kept out of the text."""

from __future__ import annotations

import pytest

from indexer.documents import LoadedDocument
from indexer.loaders import load_bytes
from indexer.loaders.anchors import Slugger, clean_anchor

pytestmark = pytest.mark.unit


def html(source: str) -> LoadedDocument:
    return load_bytes(source.encode(), "text/html", "page.html")


def headings(doc: LoadedDocument) -> list[tuple[str, str]]:
    return [(doc.text[b.start : b.end], b.anchor) for b in doc.blocks if b.kind == "heading"]


# Sphinx 7 (basic theme): sections carry the id, headings a headerlink; API entries a headerlink in <dt>.
SPHINX = """<html><head><title>Guide</title></head><body><div class="body" role="main">
<section id="installing">
<h1>Installing<a class="headerlink" href="#installing" title="Link to this heading">¶</a></h1>
<p>Run the installer.</p>
<section id="on-linux">
<h2><span class="section-number">1.1. </span>On Linux<a class="headerlink" href="#on-linux"
 title="Link to this heading">¶</a></h2>
<p>Use the package manager.</p>
<dl class="py function"><dt class="sig sig-object py" id="pkg.install">
<span class="sig-name descname">install</span>()<a class="headerlink" href="#pkg.install"
 title="Link to this definition">¶</a></dt>
<dd><p>Installs it.</p></dd></dl>
</section></section></div></body></html>"""

# DocBook (PostgreSQL's documentation): the id is on the sectN div around a title page.
DOCBOOK = """<html><head><title>5.4. Constraints</title></head><body><div class="sect1" id="DDL-CONSTRAINTS">
<div class="titlepage"><div><div><h2 class="title" style="clear: both">5.4. Constraints</h2></div></div></div>
<p>Data types are a way to limit the kind of data.</p>
<div class="sect2" id="DDL-CONSTRAINTS-CHECK-CONSTRAINTS"><div class="titlepage"><div><div>
<h3 class="title">5.4.1. Check Constraints</h3></div></div></div>
<a id="id-1.5.4.6.5.2" class="indexterm"></a><p>A check constraint is the most generic type.</p>
<div class="note"><h3 class="title">Note</h3>
<p>PostgreSQL does not support CHECK constraints that reference other tables.</p>
</div></div></div></body></html>"""


def test_sphinx_headings_take_their_section_ids_and_lose_the_pilcrow() -> None:
    doc = html(SPHINX)
    assert headings(doc) == [("Installing", "installing"), ("1.1. On Linux", "on-linux")]
    assert "¶" not in doc.text
    assert "install()" in doc.text


def test_docbook_headings_take_the_id_of_their_sect_div() -> None:
    doc = html(DOCBOOK)
    assert headings(doc) == [
        ("5.4. Constraints", "DDL-CONSTRAINTS"),
        ("5.4.1. Check Constraints", "DDL-CONSTRAINTS-CHECK-CONSTRAINTS"),
        ("Note", "DDL-CONSTRAINTS-CHECK-CONSTRAINTS"),  # an admonition lies in its section
    ]


@pytest.mark.parametrize(
    ("source", "anchor"),
    [
        ('<h2 id="own">Title</h2>', "own"),
        ('<h2><a id="inside"></a>Title</h2>', "inside"),
        ('<h2><a name="legacy">Title</a></h2>', "legacy"),
        ('<a name="before"></a>\n<h2>Title</h2>', "before"),
        ('<h2>Title <a href="#from-link" class="anchor">§</a></h2>', "from-link"),
        ('<div id="box"><h2>Title</h2><p>x</p></div>', "box"),  # the box's first heading
        ('<section id="outer"><h2>Title</h2></section>', "outer"),
        ('<h2 id="  ">Title</h2>', ""),
        ('<h2 id="has space">Title</h2>', ""),
        ("<h2>Title</h2>", ""),
    ],
)
def test_where_a_heading_anchor_comes_from(source: str, anchor: str) -> None:
    doc = html(f"<body><p>intro</p>{source}<p>after</p></body>")
    assert headings(doc) == [("Title", anchor)]


def test_a_wrapper_whose_first_heading_is_another_gives_no_anchor() -> None:
    doc = html('<div id="content"><h1>Top</h1><p>x</p><h2>Second</h2><p>y</p></div>')
    assert headings(doc) == [("Top", "content"), ("Second", "")]


@pytest.mark.parametrize("glyph", ["¶", "§", "#", "🔗", "🔗\ufe0f", " ¶ "])
def test_permalink_glyph_links_are_removed(glyph: str) -> None:
    doc = html(f'<h2 id="t">Rates <a href="#t">{glyph}</a></h2><p>Per diem <a href="#p">{glyph}</a> rates.</p>')
    assert doc.text == "Rates\n\nPer diem rates."


def test_links_that_are_not_permalinks_keep_their_text() -> None:
    doc = html('<p>See <a href="#rates">the rates</a>, issue <a href="https://x.test/i">#</a> and § 4.</p>')
    assert doc.text == "See the rates, issue # and § 4."


def test_markdown_headings_are_anchored_by_github_slugs() -> None:
    source = (
        "# Getting Started\n\ntext\n\n## Install `docqa` (v2.0)!\n\nx\n\n## Getting Started\n\ny\n\n"
        "## Getting Started\n\nz\n\n### Ünïcode & snake_case\n\nw\n"
    )
    doc = load_bytes(source.encode(), "text/markdown", "readme.md")
    assert headings(doc) == [
        ("Getting Started", "getting-started"),
        ("Install docqa (v2.0)!", "install-docqa-v20"),
        ("Getting Started", "getting-started-1"),
        ("Getting Started", "getting-started-2"),
        ("Ünïcode & snake_case", "ünïcode--snake_case"),
    ]


def test_slugs_repeat_as_github_numbers_them() -> None:
    slugger = Slugger()
    assert [slugger.slug(t) for t in ("a", "a", "a-1", "a")] == ["a", "a-1", "a-1-1", "a-2"]


@pytest.mark.parametrize("value", [None, 3, "", " ", "a b", "x\x00", "a" * 257])
def test_anything_but_a_clean_id_is_no_anchor(value: object) -> None:
    assert clean_anchor(value) == ""
