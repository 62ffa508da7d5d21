"""The grammar of ``docqa index``, ``docqa ask`` and ``docqa search`` (with ``--server``/``--token``)."""

from __future__ import annotations

from typing import Any

from service.api.cli.filters import add_filter_options
from service.api.cli.grammar import Command
from service.api.cli.queries import cmd_ask, cmd_index, cmd_search
from service.api.cli.remote import cmd_remote_query


def add_query_commands(sub: Any, command: Command) -> None:
    """The ``index``, ``ask`` and ``search`` subcommands."""
    p = command(
        sub,
        "index",
        "index a folder (txt, md, html, pdf, docx) with its ACL manifest",
        "  docqa index examples/acme --store acme\n"
        "  docqa index /srv/docs --store docs --acl-manifest /etc/docqa/docs-acl.yaml --quiet\n"
        "  docqa index /srv/docs --store docs --progress-every 60 2>> index.log   # under cron\n"
        "  docqa index /srv/docs --store docs --shard 0/2 & docqa index /srv/docs --store docs --shard 1/2",
    )
    p.add_argument("path", help="the folder; a document's id is its path relative to it")
    p.add_argument("--store", required=True, help="store id (created on first use)")
    p.add_argument("--acl-manifest", metavar="FILE", help="ACL manifest (default: acl.yaml in the folder)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    p.add_argument(
        "--reindex",
        action="store_true",
        help="load, chunk and embed every file again, changed or not (after an upgrade: PDF pages, HTML anchors)",
    )
    p.add_argument(
        "--progress-every",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between progress lines when stderr is not a terminal (default 10)",
    )
    p.add_argument(
        "--shard",
        metavar="I/N",
        help="index only shard I of N (0-based): the files whose path hashes to I mod N; the N shards, "
        "run one after another or at once (one per worker), leave the store as one run does",
    )
    p.add_argument(
        "--no-graph",
        action="store_true",
        help="embedded index: do not build and save the store's HNSW graph after the run (a server then "
        "searches exactly until its queries show a graph is worth building); shards never build it",
    )
    p.set_defaults(handler=cmd_index)

    examples = {
        "ask": '  docqa ask "What was the revenue in the third quarter?" --store acme --as alice\n'
        '  docqa ask "Summarise the risks" --store acme --as alice \\\n'
        "      --documents finance/q3-results.md finance/budget-2027.txt\n"
        '  docqa ask "What does it say about travel?" --store acme --as alice \\\n'
        "      --document finance/budget-2027.txt --json\n"
        '  docqa ask "vacation carry-over" --store acme --as bob --level 0 --no-llm\n'
        '  docqa ask "How many vacation days do I get?" --store acme --server https://docqa.example --token "$TOKEN"',
        "search": '  docqa search "on-call rotation" --store acme --as bob\n'
        '  docqa search "salary bands" --store acme --as erin --k 3 --json\n'
        '  docqa search "on-call rotation" --store acme --server http://127.0.0.1:8080 --as bob   # token minted here',
    }
    for name, handler in (("ask", cmd_ask), ("search", cmd_search)):
        summary = (
            "answer a question from the documents the user may read"
            if name == "ask"
            else ("the scored chunks the user may read, without an answer")
        )
        p = command(sub, name, summary, examples[name])
        p.add_argument("question", help="the question (at most query.max_question_chars characters)")
        p.add_argument("--store", required=True, help="store id")
        p.add_argument(
            "--as",
            dest="as_user",
            metavar="USER",
            help="act as this user id, e.g. alice (needed unless --server is given a token, which names the user)",
        )
        p.add_argument("--level", help="relevancy level in [0, 1]; 0 = no threshold; default: the store's level")
        p.add_argument("--json", action="store_true", help="print one JSON object (fields in the README)")
        if name == "ask":
            p.add_argument(
                "--documents", nargs="+", metavar="ID", help="MultiDocumentQuery: search only these documents"
            )
            p.add_argument(
                "--document", metavar="ID", help="DocumentQuery: answer from this document (whole text when it fits)"
            )
            p.add_argument(
                "--max-chunks",
                type=int,
                metavar="N",
                help="chunks to use, 1 to query.max_k (default: the store's); -1 with --documents: whole documents",
            )
            p.add_argument("--no-llm", action="store_true", help="return the scored chunks only, no answer")
        else:
            p.add_argument(
                "--k", type=int, default=10, metavar="N", help="number of chunks, 1 to query.max_k (default 10)"
            )
        add_filter_options(p)
        remote = p.add_argument_group("asking a running server", "instead of opening the data directory here")
        remote.add_argument(
            "--server",
            metavar="URL",
            help="ask the docqa serve at URL over GraphQL, e.g. http://127.0.0.1:8080 (default: $DOCQA_SERVER_URL)",
        )
        remote.add_argument(
            "--token",
            metavar="JWT",
            help="bearer token for --server; the user is the token's, --as may be left out (default: $DOCQA_TOKEN; "
            "without one, for a server on this machine, one is minted for --as USER)",
        )
        p.set_defaults(handler=handler, remote_handler=cmd_remote_query)
