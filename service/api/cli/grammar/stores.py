"""The grammar of ``docqa stores`` and ``docqa settings``: the stores and each store's settings.

``docqa settings set STORE --FLAG`` has one flag per declared store setting (``STORE_SETTINGS``), made here
from its declaration: ``--lexical-weight W``, with its description and bounds as help; an optional setting
also gets ``--clear-NAME``."""

from __future__ import annotations

from typing import Any

from service.api.cli.admin import cmd_settings, cmd_stores
from service.api.cli.grammar import Command
from service.domain.store import STORE_SETTINGS


def add_setting_flags(p: Any) -> None:
    """``--NAME`` for each store setting (an int setting's value is parsed as an int; the rest are checked
    by the setting's validator); ``--clear-NAME`` for each optional one."""
    for declared in STORE_SETTINGS:
        help_text = f"{declared.description} Allowed: {declared.bounds}."
        into = p.add_mutually_exclusive_group() if declared.optional else p
        kind = {"type": int} if declared.type is int else {}
        into.add_argument(declared.flag, metavar=declared.metavar, help=help_text, **kind)
        if declared.optional:
            into.add_argument("--clear-" + declared.flag[2:], action="store_true", help=f"remove the {declared.name}")


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
    p.add_argument("--json", action="store_true", help="print the settings (or the calibration) as one JSON object")
    p.add_argument(
        "--apply", action="store_true", help="calibrate: store the proposed thresholds (default: report only)"
    )
    p.add_argument(
        "--sample", type=int, metavar="N", help="calibrate: documents to draw probes from, 1 to 5000 (default 200)"
    )
    add_setting_flags(p)
    p.set_defaults(handler=cmd_settings)
