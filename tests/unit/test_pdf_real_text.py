"""PDF text as Debian's DocBook manuals print it: words spaced by kerning, title-page tables, contents pages."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest

from indexer.errors import LoadError
from indexer.loaders import load_bytes
from indexer.loaders.pdf_front import drop_front_matter
from indexer.loaders.pdf_text import clean_pages, page_lines
from service.quality.evaluation import has_debris

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data" / "pdf"

# Pages iii and v of the Debian New Maintainers' Guide and the contents of the Debian Policy Manual, as PDFium
# extracts them (dblatex's title-page tables; a contents page that goes on from the page before, with and
# without dot leaders).
COLLABORATORS = (
    "Debian New Maintainers’ Guide iii\nCOLLABORATORS\nTITLE :\nDebian New Maintainers’ Guide\n"
    "ACTION NAME DATE SIGNATURE\nWRITTEN BY Josip Rodin and\nOsamu Aoki\nOctober 8, 2022\nREVISION HISTORY\n"
    "NUMBER DATE DESCRIPTION NAME"
)
CONTENTS_GOES_ON = (
    "Debian New Maintainers’ Guide v\n5 Other files under the debian directory 29\n"
    "5.1 README.Debian . . . . . . . . . . . . . . . . . . . . . . 29\n5.2 compat . . . . . . . . . . . . . . 30\n"
    "5.3 conffiles . . . . . . . . . . . . . . . . . . 30\n6 Building the package 38\n"
    "6.1 Complete (re)build . . . . . . . . . . . . 38\n7 Checking the package for errors 44\n"
    "A Advanced packaging 53"
)
POLICY_CONTENTS = (
    "CONTENTS\n1 About this manual 3\n1.1 Scope . . . . . . . . . . . . . . . . . 3\n"
    "1.2 New versions of this document . . . . . . . . . . 4\n2 The Debian Archive 7\n"
    "5.6.10 Package interrelationship fields: Depends, Pre-Depends, Recommends, Suggests,\n"
    "Breaks, Conflicts, Provides, Replaces, Enhances . . . . . . . . . 41\n23 License 181\nIndex 183"
)
BODY = "This manual describes the policy requirements for the Debian distribution."


def test_words_spaced_by_kerning_keep_their_spaces() -> None:
    # Was (pypdf's extraction): "Thisdocumentmaybeusedunderthetermsof…" in answers and summaries.
    document = load_bytes((DATA / "maint-guide-copyright.pdf").read_bytes(), "application/pdf", "guide.pdf")
    assert "This document may be used under the terms of the GNU General Public License version 2 or higher." in (
        document.text
    )
    assert not has_debris(document.text)


def test_docbook_title_page_tables_are_dropped() -> None:
    assert drop_front_matter(page_lines(COLLABORATORS)) == ["Debian New Maintainers’ Guide iii"]


@pytest.mark.parametrize("page", [CONTENTS_GOES_ON, POLICY_CONTENTS + "\n\n" + BODY])
def test_contents_pages_are_dropped_with_or_without_their_heading(page: str) -> None:
    kept = [line for line in drop_front_matter(page_lines(page)) if line]
    assert kept in ([], ["Debian New Maintainers’ Guide v"], [BODY])


def test_body_text_that_ends_in_a_number_is_kept() -> None:
    text = "Debian 3.1 Sarge was released in June 2005.\nIt shipped about 15400 packages in 2005\nand 11 architectures."
    pages = clean_pages([page_lines(text)])
    assert pages[0] == page_lines(text)


def _pdf(content: bytes, pages: int) -> bytes:
    """A minimal PDF whose ``pages`` pages all draw one Flate-compressed content stream."""
    packed = zlib.compress(content, 9)
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages)).encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Length " + str(len(packed)).encode() + b" /Filter /FlateDecode >>\nstream\n" + packed + b"\nendstream",
        *[
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources << /Font << /F1 "
            + str(4 + pages).encode()
            + b" 0 R >> >> >>"
            for _ in range(pages)
        ],
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_a_decompression_bomb_is_refused_before_pdfium_decodes_it() -> None:
    # PDFium decodes without limits: a 458 KB file inflating to 150 MB cost 2.2 GB and 15 s (a reviewer's find).
    line = b"BT /F1 12 Tf 72 700 Td (Hello world) Tj ET\n"
    bomb = _pdf(line * (12 * 2**20 // len(line)), pages=8)  # 96 MB of page content in a small file
    assert len(bomb) < 200_000
    with pytest.raises(LoadError, match="cannot read PDF"):
        load_bytes(bomb, "application/pdf", "bomb.pdf")
    fine = load_bytes(_pdf(line, pages=1), "application/pdf", "fine.pdf")
    assert "Hello world" in fine.text
