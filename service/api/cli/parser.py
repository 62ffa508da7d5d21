"""The command line's grammar: every command, option, help text and example."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from service.adaptation.options import AdaptOptions
from service.api.cli.access import add_access_commands
from service.api.cli.adapt import cmd_adapt
from service.api.cli.admin import cmd_acl, cmd_db, cmd_groups, cmd_settings, cmd_stores, cmd_token
from service.api.cli.analysis import add_analysis_commands
from service.api.cli.doctor import cmd_doctor
from service.api.cli.evaluate import cmd_eval
from service.api.cli.filters import add_filter_options
from service.api.cli.history import add_history_commands
from service.api.cli.queries import cmd_ask, cmd_index, cmd_search
from service.api.cli.remote import cmd_remote_query
from service.api.cli.serve import cmd_serve


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's own exit code 2, no traceback
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message}\n")


EXIT_CODES = """exit codes:
  0  done
  1  the work ran but failed: nothing could be indexed, a doctor check failed, the schema is out of date
  2  bad input (an option, a question, a level, an id, a manifest)
  3  not found: an unknown store or document, or one the user may not read
  4  permission denied
  5  unauthenticated
  6  unavailable: the settings database, the index or the language model is down
  7  deadline exceeded
  8  configuration error (the message names the key)
  70 internal error (re-run with --debug for the traceback)
  130 interrupted; 141 output closed early (e.g. piped into head)"""


def _command(sub: Any, name: str, summary: str, examples: str) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with examples."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=summary,
        description=summary,
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="docqa",
        description="Access-controlled document question answering.",
        epilog="examples:\n"
        "  docqa index examples/acme --store acme\n"
        '  docqa ask "How many vacation days can I carry over?" --store acme --as bob\n'
        "  docqa COMMAND --help     (every command has examples)\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", help="YAML configuration file (default: $DOCQA_CONFIG; none = built-in defaults)")
    parser.add_argument("--data-dir", help="data directory (default: $DOCQA_DATA_DIR or ~/.local/share/docqa)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens (INFO level)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")

    p = _command(
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
        '  docqa ask "vacation carry-over" --store acme --as bob --level 0 --no-llm',
        "search": '  docqa search "on-call rotation" --store acme --as bob\n'
        '  docqa search "salary bands" --store acme --as erin --k 3 --json',
    }
    for name, handler in (("ask", cmd_ask), ("search", cmd_search)):
        summary = (
            "answer a question from the documents the user may read"
            if name == "ask"
            else ("the scored chunks the user may read, without an answer")
        )
        p = _command(sub, name, summary, examples[name])
        p.add_argument("question", help="the question (at most query.max_question_chars characters)")
        p.add_argument("--store", required=True, help="store id")
        p.add_argument("--as", dest="as_user", required=True, metavar="USER", help="act as this user id, e.g. alice")
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
            help="bearer token for --server (default: $DOCQA_TOKEN; on this machine one is minted for --as USER)",
        )
        p.set_defaults(handler=handler, remote_handler=cmd_remote_query)

    add_analysis_commands(sub, _command)

    p = _command(
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

    p = _command(
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

    p = _command(sub, "stores", "list stores with document and chunk counts", "  docqa stores\n  docqa stores --json")
    p.add_argument("--json", action="store_true", help="print a JSON list of every store's settings and counts")
    p.set_defaults(handler=cmd_stores)

    p = _command(
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

    p = _command(
        sub,
        "groups",
        "the group directory: admin changes win over the stores' manifests until reset",
        "  docqa groups list --store acme\n"
        "  docqa groups add-member finance user:frank\n"
        "  docqa groups remove-member auditors user:carol\n"
        "  docqa groups reset auditors user:carol",
    )
    gsub = p.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    for action, text, example in (
        (
            "add-member",
            "add a global membership (lifts an earlier remove-member of the pair)",
            "  docqa groups add-member finance user:frank\n  docqa groups add-member group:finance group:auditors",
        ),
        (
            "remove-member",
            "remove a membership from the global directory and from every store's manifest; "
            "kept over every re-index until 'groups reset'",
            "  docqa groups remove-member auditors user:carol",
        ),
        (
            "reset",
            "drop the admin's remove-member/add-member of the pair: the manifests decide again",
            "  docqa groups reset auditors user:carol",
        ),
    ):
        q = _command(gsub, action, text, example)
        q.add_argument("group", help="group id or group:<id>")
        q.add_argument("principal", help="user:<id> or group:<id>")
    q = _command(
        gsub,
        "list",
        "members in force by scope (global, store S's manifest); --provenance: every row and removal",
        "  docqa groups list\n  docqa groups list --store acme\n  docqa groups list --provenance --json",
    )
    q.add_argument("--store", help="memberships in force for this store's documents (global + its manifest)")
    q.add_argument("--provenance", action="store_true", help="every membership with its source, and removals")
    q.add_argument("--json", action="store_true", help="every membership with its source, as JSON")
    p.set_defaults(handler=cmd_groups)

    p = _command(
        sub,
        "acl",
        "a document's authoritative ACL: admin changes win over the manifest until reset",
        "  docqa acl show finance/q3-results.md\n"
        "  docqa acl set finance/q3-results.md --allow group:finance --deny user:alice\n"
        "  docqa acl reset finance/q3-results.md",
    )
    asub = p.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    text = (
        "replace the document's WHOLE ACL (allow and deny: entries not given are dropped) by an admin "
        "override; in force on the next query and kept over every re-index until 'acl reset'"
    )
    q = _command(
        asub,
        "set",
        text,
        "  docqa acl set finance/q3-results.md --allow group:finance --deny user:alice\n"
        "  docqa acl set handbook/expenses.md --store acme --allow group:everyone",
    )
    q.add_argument("document_id", help="the document's id (its path relative to the indexed folder)")
    q.add_argument("--store", help="store id (needed when several stores hold the id)")
    q.add_argument(
        "--allow", nargs="+", metavar="P", default=[], help="principals who may read (user:<id>, group:<id>)"
    )
    q.add_argument("--deny", nargs="+", metavar="P", default=[], help="principals who may not, whatever --allow says")
    for action, text, example in (
        (
            "reset",
            "drop the admin override: the manifest's (or the pushing system's) ACL is in force again",
            "  docqa acl reset finance/q3-results.md --store acme",
        ),
        (
            "show",
            "the effective ACL, its source (manifest | api | admin with who and when) and the source's value",
            "  docqa acl show finance/q3-results.md\n  docqa acl show handbook/expenses.md --store acme",
        ),
    ):
        q = _command(asub, action, text, example)
        q.add_argument("document_id", help="the document's id")
        q.add_argument("--store", help="store id (needed when several stores hold the id)")
    p.set_defaults(handler=cmd_acl)
    add_access_commands(sub, _command)

    p = _command(
        sub,
        "doctor",
        "check configuration and connectivity: settings database, index, language model",
        "  docqa doctor\n  DOCQA_CONFIG=/etc/docqa/config.yaml docqa doctor",
    )
    p.set_defaults(handler=cmd_doctor)

    p = _command(
        sub,
        "serve",
        "serve gRPC and HTTP (GraphQL, health, metrics) until interrupted",
        "  docqa serve\n  docqa serve --host 0.0.0.0 --grpc-port 50051 --http-port 8080",
    )
    p.add_argument("--host", help="address to listen on (default: server.host, 127.0.0.1)")
    p.add_argument("--grpc-port", type=int, metavar="PORT", help="gRPC port (default: server.grpc_port, 50051)")
    p.add_argument("--http-port", type=int, metavar="PORT", help="HTTP/GraphQL port (default: server.http_port, 8080)")
    p.set_defaults(handler=cmd_serve)

    p = _command(
        sub,
        "token",
        "mint a bearer token (JWT) with the configured HS256 secret",
        "  docqa token --user alice\n  docqa token --user root --admin --ttl 600",
    )
    p.add_argument("--user", required=True, help="user id (the token's subject)")
    p.add_argument(
        "--group", action="append", metavar="G", help="group id (used only with auth.token_groups: trust); repeatable"
    )
    p.add_argument("--admin", action="store_true", help="give the admin role")
    p.add_argument(
        "--ttl",
        type=int,
        metavar="S",
        help="lifetime in seconds (default: auth.default_ttl_s; at most auth.max_token_lifetime_s)",
    )
    p.set_defaults(handler=cmd_token)

    p = _command(
        sub,
        "db",
        "the settings database's schema (Alembic migrations)",
        "  docqa db current\n  DOCQA_DATABASE_URL=postgresql+psycopg://docqa@db/docqa docqa db upgrade",
    )
    p.add_argument("action", choices=["upgrade", "current"], help="upgrade: apply migrations; current: show revision")
    p.set_defaults(handler=cmd_db)
    add_history_commands(sub, _command)
    return parser
