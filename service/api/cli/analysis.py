"""``docqa summarize`` and ``docqa compare``: a document's summary, documents compared by topic."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

Command = Callable[[Any, str, str, str], argparse.ArgumentParser]


def add_analysis_commands(sub: Any, command: Command) -> None:
    """The ``summarize`` and ``compare`` subcommands (``command`` is the parser's own subcommand factory)."""
    p = command(
        sub,
        "summarize",
        "summarise a document the user may read: extractive offline, written by the language model with watsonx",
        "  docqa summarize handbook/vacation.md --store acme --as bob\n"
        "  docqa summarize handbook/vacation.md --store acme --as bob --length short --json",
    )
    p.add_argument("document_id", help="the document's id (its path relative to the indexed folder)")
    p.add_argument("--store", required=True, help="store id")
    p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="act as this user id, e.g. alice")
    p.add_argument("--length", choices=["short", "medium", "long"], default="medium", help="default medium")
    p.add_argument("--json", action="store_true", help="the whole result as JSON")
    p.set_defaults(handler=cmd_summarize)

    p = command(
        sub,
        "compare",
        "compare 2 to 5 documents the user may read, topic by topic, every statement citing its chunk",
        "  docqa compare handbook/vacation.md handbook/expenses.md --store acme --as bob\n"
        '  docqa compare handbook/vacation.md handbook/expenses.md --store acme --as bob --question "approval"',
    )
    p.add_argument("document_ids", nargs="+", metavar="DOCUMENT_ID", help="2 to 5 document ids")
    p.add_argument("--store", required=True, help="store id")
    p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="act as this user id, e.g. alice")
    p.add_argument("--question", help="rank the topics by similarity to this question")
    p.add_argument("--json", action="store_true", help="the whole result as JSON")
    p.set_defaults(handler=cmd_compare)


def cmd_summarize(args: argparse.Namespace, app: Any) -> int:
    from service.api.cli.audited import CLI_INTERFACE, cli_analysis, cli_identity
    from service.domain.analysis import SummaryRequest

    identity = cli_identity(args.as_user)  # validates the user id before any work
    request = SummaryRequest(args.store, args.document_id, args.length)
    summary = cli_analysis(app).summarize(identity, request, CLI_INTERFACE)
    if args.json:
        print(json.dumps(summary.to_dict(local=True), ensure_ascii=False))
        return 0
    out = sys.stdout
    kind = (
        "Extractive summary (sentences quoted from the document, no language model)"
        if summary.extractive
        else (f"Summary by {summary.model_id}")
    )
    print(f"{kind} of {summary.title} for {args.as_user}:", file=out)
    _indented(summary.summary, out)
    print(file=out)
    for section in summary.sections:
        if section.cited:
            pages = f" · p. {', '.join(map(str, section.pages))}" if section.pages else ""
            print(f"  [{section.citation}] {' > '.join(section.heading_path) or summary.title}{pages}", file=out)
    _footer(summary.warnings, summary.generation_error, summary.query_id, out)
    print(f"sections cited: {summary.sections_covered} of {len(summary.sections)}", file=out)
    return 0


def cmd_compare(args: argparse.Namespace, app: Any) -> int:
    from service.api.cli.audited import CLI_INTERFACE, cli_analysis, cli_identity
    from service.domain.analysis import ComparisonRequest

    identity = cli_identity(args.as_user)
    request = ComparisonRequest(args.store, tuple(args.document_ids), args.question)
    comparison = cli_analysis(app).compare(identity, request, CLI_INTERFACE)
    if args.json:
        print(json.dumps(comparison.to_dict(local=True), ensure_ascii=False))
        return 0
    out = sys.stdout
    kind = (
        "Extractive comparison (quoted statements, no language model)"
        if comparison.extractive
        else (f"Comparison by {comparison.model_id}")
    )
    print(f"{kind} for {args.as_user}:", file=out)
    _indented(comparison.comparison, out)
    print(file=out)
    for number, chunk in enumerate(comparison.sources, start=1):
        heading = " > ".join(chunk.heading_path) or chunk.title
        print(f"  [{number}] {chunk.document_id} · {heading}", file=out)
    _footer(comparison.warnings, comparison.generation_error, comparison.query_id, out)
    return 0


def _indented(text: str, out: TextIO) -> None:
    for line in text.splitlines():
        print(f"  {line}", file=out)


def _footer(warnings: tuple[str, ...], error: str | None, query_id: str, out: TextIO) -> None:
    for warning in warnings:
        print(f"note: {warning}", file=out)
    if error is not None:
        print(f"note: the language model failed ({error}); the extractive result is shown", file=out)
    print(f"query {query_id}", file=out)
