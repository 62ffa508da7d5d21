"""PDF text as Debian's DocBook manuals print it: words spaced by kerning, title-page tables, contents pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.loaders import load_bytes
from indexer.loaders.pdf_text import clean_pages, drop_front_matter, page_lines
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
