"""The grammar of ``docqa eval`` and ``docqa adapt``: answer quality, and the store's own reranker."""

from __future__ import annotations

from typing import Any

from service.adaptation.options import AdaptOptions
from service.api.cli.adapt import cmd_adapt
from service.api.cli.evaluate import cmd_eval
from service.api.cli.grammar import Command


def add_quality_commands(sub: Any, command: Command) -> None:
    """The ``eval`` and ``adapt`` subcommands."""
    p = command(
        sub,
        "eval",
        "answer quality on a question file: hit@1, hit@5, MRR, answered/refused, key terms",
        "  docqa eval bench/quality/postgresql-15.yaml --store pg --as alice\n"
        "  docqa eval questions.yaml --store acme --as bob --level 0.5 --json report.json\n"
        "  docqa eval questions.yaml --store acme --as bob --quiet --json - | jq .summary",
    )
    p.add_argument("questions", help="YAML question file (format in the README, section Answer quality)")
    p.add_argument("--store", required=True, help="store id")
    p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="ask as this user id")
    p.add_argument("--level", help="relevancy level for the answered/refused run (default: the store's)")
    p.add_argument("--depth", type=int, default=20, metavar="N", help="chunks retrieved to rank documents (default 20)")
    p.add_argument("--json", metavar="FILE", help="write the full report as JSON to FILE ('-' = stdout)")
    p.add_argument("--quiet", action="store_true", help="print the summary only")
    p.set_defaults(handler=cmd_eval)

    p = command(
        sub,
        "adapt",
        "train the store's own reranker on its documents (offline, no labels) and install it if it ranks better; "
        "queries use it with rerank.kind adapted",
        "  docqa adapt acme                       # learns from what group:everyone may read\n"
        "  docqa adapt docs --principal group:staff --questions questions.yaml --as alice\n"
        "  docqa adapt docs --max-queries 800 --layers 3 --progress-every 60 2>> adapt.log   # under cron\n"
        "  docqa adapt docs --all-content        # every document whatever its ACL (see the README's warning)",
    )
    p.add_argument("store", help="store id")
    p.add_argument(
        "--principal",
        action="append",
        metavar="P",
        help="learn only from documents this principal may read (repeatable; default group:everyone)",
    )
    p.add_argument(
        "--all-content",
        action="store_true",
        help="learn from every document whatever its ACL (the model can then carry what some callers may not read)",
    )
    p.add_argument("--questions", metavar="FILE", help="also judge the model on a docqa eval question file")
    p.add_argument("--as", dest="as_user", metavar="USER", help="with --questions: the user they are asked as")
    d = AdaptOptions()
    p.add_argument(
        "--max-queries",
        type=int,
        default=d.max_queries,
        metavar="N",
        help=f"pseudo-queries to train on ({d.max_queries})",
    )
    p.add_argument("--layers", type=int, default=d.layers, metavar="N", help=f"encoder layers kept, of 6 ({d.layers})")
    p.add_argument(
        "--max-tokens", type=int, default=d.max_tokens, metavar="N", help=f"tokens of a pair read ({d.max_tokens})"
    )
    p.add_argument("--epochs", type=int, default=d.epochs, metavar="N", help=f"passes over the queries ({d.epochs})")
    p.add_argument("--depth", type=int, default=d.depth, metavar="N", help=f"candidates the model reorders ({d.depth})")
    p.add_argument("--seed", type=int, default=d.seed, help=f"seed of every random choice ({d.seed})")
    p.add_argument("--device", help="torch device to train on (default: cuda when there is one, else cpu)")
    p.add_argument("--restart", action="store_true", help="throw away an interrupted run's work instead of resuming it")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument(
        "--progress-every", type=float, default=10.0, metavar="S", help="seconds between progress lines (default 10)"
    )
    p.set_defaults(handler=cmd_adapt)
