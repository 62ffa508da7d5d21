"""Offline (extractive) summary of a 300-page PDF: time, sections covered; against a 30-page PDF in the same run.

The PDFs are built with reportlab from real text: the PostgreSQL 15 manual's HTML pages
(``/usr/share/doc/postgresql-doc-15/html``, Debian package ``postgresql-doc-15``), one outline entry per
manual page, so the loader gives each page's title as its heading. Each PDF is indexed through the real
ingest path (PDF loader, chunker, embedded index) with a hashing embedder, since an extractive summary uses
no vectors; then ``docqa``'s engine summarises it for a reader. Printed per PDF: pages, chunks, sections,
the time to load+chunk+index (the baseline) and to summarise, their ratio, and the sections the summary
cites and those with a section summary of their own. Run: ``python -m bench.summary [--pages 300]``
(``--manual DIR``: another folder of HTML pages).
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen.canvas import Canvas

from acl.model import Acl
from bench.provenance import record
from service.bootstrap import build_app
from service.config import Settings
from service.domain.analysis import SummaryRequest
from service.domain.queries import Caller
from tests.fakes_service import FakeEmbedder

MANUAL = Path("/usr/share/doc/postgresql-doc-15/html")
LINES_PER_PAGE, CHARS_PER_LINE = 52, 95


def manual_pages(manual: Path) -> list[tuple[str, list[str]]]:
    """(title, paragraphs) of the manual's pages, in file order."""
    pages = []
    warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)  # the manual is XHTML, read as HTML
    for path in sorted(manual.glob("*.html")):
        soup = BeautifulSoup(path.read_text(encoding="utf-8", errors="replace"), "lxml")
        title = " ".join((soup.title.string if soup.title and soup.title.string else path.stem).split())
        paragraphs = [" ".join(p.get_text(" ").split()) for p in soup.find_all("p")]
        paragraphs = [p for p in paragraphs if len(p) > 40]
        if paragraphs:
            pages.append((title, paragraphs))
    return pages


def build_pdf(pages: int, manual: Path) -> tuple[bytes, int]:
    """A PDF of exactly ``pages`` pages of manual text, one outline entry per manual page; and their count."""
    out = io.BytesIO()
    canvas = Canvas(out, pagesize=A4)
    canvas.setTitle("PostgreSQL 15 manual (excerpt)")
    written, line, sections = 0, 0, 0
    for number, (title, paragraphs) in enumerate(manual_pages(manual)):
        if written >= pages:
            break
        key = f"s{number}"
        canvas.bookmarkPage(key, fit="XYZ", top=800 - 14 * line)
        canvas.addOutlineEntry(title, key, level=0)
        sections += 1
        for text in [title, *paragraphs]:
            words, current = text.split(), ""
            rows = []
            for word in words:
                if len(current) + len(word) + 1 > CHARS_PER_LINE:
                    rows.append(current)
                    current = word
                else:
                    current = f"{current} {word}".strip()
            rows.append(current)
            for row in [*rows, ""]:
                if line == LINES_PER_PAGE:
                    canvas.showPage()
                    written += 1
                    line = 0
                    if written >= pages:
                        break
                canvas.drawString(40, 800 - 14 * line, row)
                line += 1
            if written >= pages:
                break
    if written < pages:
        canvas.showPage()
        written += 1
    canvas.save()
    return out.getvalue(), sections


def measure(pages: int, data_dir: Path, manual: Path) -> dict[str, float]:
    pdf, outline = build_pdf(pages, manual)
    app = build_app(Settings(data_dir=data_dir / f"p{pages}"), embedder_factory=lambda _: FakeEmbedder(max_tokens=256))
    try:
        started = time.perf_counter()
        app.ingestor("bench").upsert_bytes("manual.pdf", pdf, "application/pdf", acl=Acl.of(["group:everyone"]))
        indexed = time.perf_counter() - started
        started = time.perf_counter()
        summary = app.engine.summarize(Caller("reader"), SummaryRequest("bench", "manual.pdf", "medium"))
        summarized = time.perf_counter() - started
    finally:
        app.close()
    return {
        "pages": pages,
        "outline": outline,
        "chunks": sum(len(s.chunk_ids) for s in summary.sections),
        "sections": len(summary.sections),
        "own": sum(1 for s in summary.sections if s.summary),
        "cited": summary.sections_covered,
        "index_s": indexed,
        "summary_s": summarized,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--baseline-pages", type=int, default=30)
    parser.add_argument("--manual", type=Path, default=MANUAL, help="folder of HTML pages (default: %(default)s)")
    args = parser.parse_args()
    if args.pages < 1 or args.baseline_pages < 1:
        parser.error("--pages and --baseline-pages must be at least 1")
    if not manual_pages(args.manual):
        sys.exit(f"{args.manual}: no HTML page with text (apt-get install postgresql-doc-15, or pass --manual)")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(args.baseline_pages, Path(tmp), args.manual), measure(args.pages, Path(tmp), args.manual)]
    print("pages  outline  chunks  sections  with own summary  cited  load+chunk+index s  summary s  summary/index")
    for r in rows:
        print(
            f"{r['pages']:5d}  {r['outline']:7d}  {r['chunks']:6d}  {r['sections']:8d}  "
            f"{r['own']:5d} ({r['own'] / max(r['sections'], 1):4.0%})    "
            f"{r['cited']:5d}  {r['index_s']:18.2f}  {r['summary_s']:9.2f}  {r['summary_s'] / r['index_s']:12.2f}×"
        )
    small, large = rows
    print(
        f"{large['pages']} pages vs {small['pages']}: summary time ×{large['summary_s'] / small['summary_s']:.1f} "
        f"for ×{large['chunks'] / max(small['chunks'], 1):.1f} chunks"
    )
    record("summary", {"baseline": small, "measured": large})


if __name__ == "__main__":
    main()
