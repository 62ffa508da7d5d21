"""The grammar of ``docqa stores`` and ``docqa settings``: the stores and each store's settings.

A new per-store setting's flag goes into ``settings`` here (``docqa settings set STORE --FLAG``)."""

from __future__ import annotations

from typing import Any

from service.api.cli.admin import cmd_settings, cmd_stores
from service.api.cli.grammar import Command


def add_store_commands(sub: Any, command: Command) -> None:
    """The ``stores`` and ``settings`` subcommands."""
    p = command(sub, "stores", "list stores with document and chunk counts", "  docqa stores\n  docqa stores --json")
    p.add_argument("--json", action="store_true", help="print a JSON list of every store's settings and counts")
    p.set_defaults(handler=cmd_stores)

    p = command(
        sub,
        "settings",
        "show or change a store's settings (relevancy level, thresholds, chunks, prompt, model, fusion, links); "
        "calibrate the thresholds from the store's own content",
        "  docqa settings show acme\n"
        "  docqa settings set acme --level 0.7\n"
        "  docqa settings calibrate acme            # report only: predicted answer/refusal rates per level\n"
        "  docqa settings calibrate acme --apply    # store the proposed min/max thresholds (audited)\n"
        "  docqa settings set acme --min-threshold 0.15 --max-threshold 0.65 --max-chunks 5\n"
        "  docqa settings set acme --prompt-template 'Answer from:\\n{context}\\nQuestion: {question}'\n"
        "  docqa settings set acme --fusion rrf --lexical-weight 0.3 --source-base-url https://intranet/docs/",
    )
    p.add_argument(
        "action",
        choices=["show", "set", "calibrate"],
        help="show the settings, set the options given, or calibrate min/max thresholds from the store's content",
    )
    p.add_argument("store", help="store id")
    p.add_argument("--level", help="default relevancy level in [0, 1] (0 = no threshold)")
    p.add_argument("--min-threshold", metavar="X", help="cosine similarity that level 0 maps to, in [-1, 1]")
    p.add_argument("--max-threshold", metavar="X", help="cosine similarity that level 1 maps to, in [-1, 1]")
    p.add_argument("--max-chunks", type=int, metavar="N", help="chunks per answer, 1 to 100")
    p.add_argument(
        "--prompt-template",
        metavar="T",
        help="prompt with {context} and {question} once each, nothing else in braces ({{ and }} for literal ones)",
    )
    p.add_argument("--llm-model-id", metavar="ID", help="the language model of this store (watsonx model id)")
    p.add_argument("--json", action="store_true", help="print the settings (or the calibration) as one JSON object")
    p.add_argument(
        "--apply", action="store_true", help="calibrate: store the proposed thresholds (default: report only)"
    )
    p.add_argument(
        "--sample", type=int, metavar="N", help="calibrate: documents to draw probes from, 1 to 5000 (default 200)"
    )
    p.add_argument(
        "--fusion",
        metavar="METHOD",
        help="how vector and BM25 results are merged: rrf, weighted, dense (no BM25) or lexical (BM25 only)",
    )
    p.add_argument(
        "--lexical-weight", metavar="W", help="the BM25 ranking's share in rrf and weighted fusion, in [0, 1]"
    )
    url = p.add_mutually_exclusive_group()
    url.add_argument(
        "--source-base-url",
        metavar="URL",
        help="http(s) URL that indexed paths are joined to for links (no user, query or fragment)",
    )
    url.add_argument("--clear-source-base-url", action="store_true", help="remove the store's source base URL")
    p.set_defaults(handler=cmd_settings)
