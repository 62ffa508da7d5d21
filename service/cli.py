"""``docqa``: the command line. It parses, calls the application, and maps errors.

The CLI is the administrator's tool on the server: ``--as USER`` acts for that
user, with that user's principals from the directory. Commands that don't
embed never import the embedding model.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from acl.errors import DocQAError, InvalidArgument
from acl.model import user_principal
from service.errors import mapping_for, public_message

log = logging.getLogger("docqa.cli")

Handler = Callable[[argparse.Namespace, Any], int]


def _group_principal(value: str) -> str:
    return value if value.startswith("group:") else f"group:{value}"


# ---------------------------------------------------------------------------- commands
def cmd_index(args: argparse.Namespace, app: Any) -> int:
    from contextlib import nullcontext

    from indexer.pipeline import folder_and_manifest
    from service.progress import IndexProgress

    manifest = Path(args.acl_manifest) if args.acl_manifest else None
    folder_and_manifest(Path(args.path), manifest)  # a missing folder is named before the model loads
    ingestor = app.ingestor(args.store)
    on_terminal = sys.stderr.isatty()
    progress = None
    if not args.quiet:
        progress = IndexProgress(
            f"indexing {args.path}", stream=sys.stderr, bar=on_terminal, interval_s=args.progress_every
        )
    # Library warnings (pypdf's "EOF marker not found", ...) reach the log, and
    # on a terminal the log is written above the bar, never into it.
    log_above_bar: Any = nullcontext()
    if progress is not None and on_terminal:
        from tqdm.contrib.logging import logging_redirect_tqdm

        log_above_bar = logging_redirect_tqdm()
    try:
        with log_above_bar:
            report = ingestor.index_folder(
                Path(args.path),
                manifest,
                progress=progress.on_files if progress else None,
                on_total=progress.on_total if progress else None,
                on_chunks=progress.on_chunks if progress else None,
            )
    finally:
        if progress is not None:
            progress.close()
    for name, reason in sorted({**report.refused, **report.failed}.items()):
        print(f"skipped {name}: {reason}", file=sys.stderr)
    for name in report.unmatched:
        print(f"note: {name}: no rule of the ACL manifest matches it, so nobody may read it", file=sys.stderr)
    print(
        f"store {args.store}: {len(report.indexed)} indexed ({report.chunks} chunks), "
        f"{len(report.unchanged)} unchanged, {len(report.acl_updated)} ACL updated, "
        f"{len(report.removed)} removed, {len(report.failed)} failed"
        + (f", {len(report.refused)} refused (links, special files, bad names)" if report.refused else "")
        + (f", {len(report.skipped)} unsupported files ignored" if report.skipped else "")
    )
    if not report.ok:
        print("error: no document could be indexed", file=sys.stderr)
        return 1
    return 0


def _print_answer(answer: Any, user: str, out: TextIO) -> None:
    if answer.answer is not None:
        print(f"Answer for {user}:", file=out)
        for line in answer.answer.splitlines():
            print(f"  {line}", file=out)
        print(file=out)
    if answer.chunks:
        print("Sources:", file=out)
        for number, chunk in enumerate(answer.chunks, start=1):
            where = " › ".join(chunk.heading_path) or chunk.title
            score = "n/a" if chunk.score is None else f"{chunk.score:.3f}"
            relevance = "n/a" if chunk.relevance is None else f"{chunk.relevance:.2f}"
            print(f"  [{number}] {chunk.document_id} — {where}", file=out)
            print(f"      score {score}  relevance {relevance}  ({chunk.source_uri})", file=out)
            snippet = " ".join(chunk.text.split())
            print(f"      {snippet[:200]}{'…' if len(snippet) > 200 else ''}", file=out)
    elif answer.answer is None:
        print("No relevant chunk found.", file=out)
    threshold = "off" if answer.threshold is None else f"{answer.threshold:.3f} (level {answer.level})"
    print(f"threshold {threshold} · query {answer.query_id}", file=out)
    if answer.retry_without_threshold_allowed:
        print("You may re-run the query with --level 0 to drop the threshold.", file=out)


def cmd_ask(args: argparse.Namespace, app: Any) -> int:
    from service.queries import Caller, DocumentQuery, MultiDocumentQuery, VectorQuery

    caller = Caller(args.as_user)
    user_principal(args.as_user)  # validates the user id before any work
    if args.max_chunks is not None and args.max_chunks != -1:
        _check_k("--max-chunks", args.max_chunks, app, " (or -1 with --documents for whole documents)")
    query: Any
    if args.document is not None and args.documents:
        raise InvalidArgument("use either --document or --documents, not both")
    if args.document is not None:
        if args.max_chunks is not None:
            raise InvalidArgument("--max-chunks does not apply to --document")
        query = DocumentQuery(args.store, args.question, args.document, args.level, not args.no_llm)
    elif args.documents:
        query = MultiDocumentQuery(
            args.store, args.question, tuple(args.documents), args.level, args.max_chunks, not args.no_llm
        )
    else:
        query = VectorQuery(args.store, args.question, args.level, args.max_chunks, not args.no_llm)
    answer = app.engine.ask(caller, query)
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, args.as_user, sys.stdout)
    return 0


def _check_k(option: str, value: int, app: Any, hint: str = "") -> None:
    """Name the option, not the API field, when a chunk count is out of range."""
    top = app.settings.query.max_k
    if not 1 <= value <= top:
        raise InvalidArgument(f"{option} must be between 1 and {top}{hint}, got {value}")


def cmd_search(args: argparse.Namespace, app: Any) -> int:
    from service.queries import Caller, VectorQuery

    caller = Caller(args.as_user)
    user_principal(args.as_user)
    _check_k("--k", args.k, app)
    answer = app.engine.ask(caller, VectorQuery(args.store, args.question, args.level, args.k, perform_llm_query=False))
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, args.as_user, sys.stdout)
    return 0


def _store_dict(store: Any) -> dict[str, Any]:
    """Every setting of a store, in its field order."""
    return dataclasses.asdict(store)


def cmd_stores(args: argparse.Namespace, app: Any) -> int:
    from service.store_summaries import ADMIN, StoreSummaries

    # The CLI is the administrator's tool on the server: the admin view, through the one listing.
    summaries = StoreSummaries(app.repository).list(ADMIN)
    if args.json:
        print(json.dumps([{**_store_dict(s.store), "documents": s.documents, "chunks": s.chunks} for s in summaries]))
        return 0
    if not summaries:
        print("no stores yet: create one with 'docqa index PATH --store NAME'")
        return 0
    print(f"{'store':<20} {'documents':>9} {'chunks':>8} {'level':>6}  model")
    for s in summaries:
        print(f"{s.store.id:<20} {s.documents:>9} {s.chunks:>8} {s.store.level:>6.2f}  {s.store.embedding_model}")
    return 0


def cmd_settings(args: argparse.Namespace, app: Any) -> int:
    admin = app.admin_without_index()
    if args.action == "set":
        store = admin.update_settings(
            args.store,
            level=args.level,
            min_threshold=args.min_threshold,
            max_threshold=args.max_threshold,
            max_chunks=args.max_chunks,
            prompt_template=args.prompt_template,
            llm_model_id=args.llm_model_id,
        )
    else:
        store = admin.store(args.store)
    data = _store_dict(store)
    if args.json:
        print(json.dumps(data))
    else:
        for key, value in data.items():
            shown = value.replace("\n", "\\n") if isinstance(value, str) else value
            print(f"{key:<16} {shown}")
    return 0


def _actor() -> str:
    """Who made an admin change on the command line: ``cli:<login>`` ($DOCQA_ACTOR names someone else)."""
    import getpass

    name = os.environ.get("DOCQA_ACTOR")
    if not name:
        try:
            name = getpass.getuser()
        except Exception:  # no login name (a container without a passwd entry)
            name = "unknown"
    return f"cli:{name}"


def _membership_line(view: Any) -> str:
    parts = []
    for row in view.rows:
        where = "global" if not row.scope else f"store {row.scope}"
        who = f" by {row.changed_by}" if row.changed_by else ""
        when = f" at {row.changed_at.isoformat()}" if row.changed_at else ""
        parts.append(f"{row.source} ({where}){who}{when}")
    if view.tombstone is not None:
        t = view.tombstone
        parts.append(f"REMOVED by {t.removed_by} at {t.removed_at.isoformat()} (undo: docqa groups reset)")
    return f"{view.group} {view.member}: " + "; ".join(parts)


def _membership_dict(view: Any) -> dict[str, Any]:
    tombstone = view.tombstone
    return {
        "group": view.group,
        "member": view.member,
        "rows": [
            {
                "scope": row.scope or None,
                "source": row.source,
                "changed_by": row.changed_by,
                "changed_at": None if row.changed_at is None else row.changed_at.isoformat(),
            }
            for row in view.rows
        ],
        "removed": None
        if tombstone is None
        else {"removed_by": tombstone.removed_by, "removed_at": tombstone.removed_at.isoformat()},
    }


def cmd_groups(args: argparse.Namespace, app: Any) -> int:
    admin = app.admin_without_index()
    if args.action == "list":
        if args.json:
            print(json.dumps([_membership_dict(v) for v in admin.membership_views()]))
        elif args.provenance:
            for view in admin.membership_views():
                print(_membership_line(view))
        elif args.store is not None:
            for group, members in sorted(app.repository.group_members(args.store).items()):
                print(f"{group}: {', '.join(sorted(members))}")
        else:
            # Memberships in force, by scope: the global directory, then each store's manifest groups.
            scoped: dict[tuple[str, str], set[str]] = {}
            for view in admin.membership_views():
                if view.tombstone is None:
                    for row in view.rows:
                        scoped.setdefault((view.group, row.scope), set()).add(view.member)
            for (group, scope), members in sorted(scoped.items()):
                where = "global" if not scope else f"store {scope}"
                print(f"{group} ({where}): {', '.join(sorted(members))}")
        return 0
    group = _group_principal(args.group)
    if args.action == "add-member":
        added = admin.add_member(group, args.principal, _actor())
        print(f"{args.principal} {'added to' if added else 'was already in'} {group}")
    elif args.action == "remove-member":
        admin.remove_member(group, args.principal, _actor())
        print(f"{args.principal} removed from {group} (kept over re-indexing; undo: docqa groups reset)")
    else:
        admin.reset_member(group, args.principal)
        print(f"{args.principal} in {group}: handed back to the stores' manifests")
    return 0


def cmd_acl(args: argparse.Namespace, app: Any) -> int:
    if args.action == "set":
        if not args.allow and not args.deny:
            raise InvalidArgument("give --allow and/or --deny principals")
        view = app.admin.set_acl(args.document_id, args.allow or [], args.deny or [], _actor(), args.store)
    elif args.action == "reset":
        view = app.admin.reset_acl(args.document_id, args.store)
    else:
        view = app.admin_without_index().acl_view(args.document_id, args.store)
    print(json.dumps(view.to_dict()))
    return 0


#: Oldest OpenSearch the adapter supports per engine (cosine on faiss: 2.19; ef_search in the query: 2.16).
_OPENSEARCH_MINIMUM = {"faiss": (2, 19), "lucene": (2, 16)}


def cmd_doctor(args: argparse.Namespace, app: Any) -> int:
    """Check configuration and connectivity; print one line per check; never print a secret."""
    from sqlalchemy.engine import make_url

    settings = app.settings
    failed = 0

    def line(check: str, ok: bool, detail: str) -> None:
        nonlocal failed
        failed += 0 if ok else 1
        print(f"{check:<24} {'ok' if ok else 'FAIL':<5} {detail}")

    # Before anything opens (and so creates) a file under the data directory.
    for check, detail in _doctor_private_files(settings.data_dir):
        print(f"{check:<24} {'WARN':<5} {detail}")

    stores: list[Any] = []
    database = make_url(settings.database_url).render_as_string(hide_password=True)
    try:
        stores = app.repository.list_stores()
        line("settings database", True, f"{database} ({len(stores)} store(s))")
    except DocQAError as exc:
        line("settings database", False, f"{database}: {public_message(exc)}")
    except Exception as exc:  # any driver error: the database is what is wrong
        line("settings database", False, f"{database}: cannot open ({type(exc).__name__})")

    _doctor_index(app, stores, line)
    from service.watsonx import check as check_generator

    for name, ok, detail in check_generator(settings):
        line(name, ok, detail)
    return 0 if not failed else 1


def _doctor_private_files(data_dir: Path) -> list[tuple[str, str]]:
    """Warnings for entries under the data directory that others than its owner may read or write."""
    from indexer.private_files import wider_than_private

    if not data_dir.is_dir():
        return []
    wide = wider_than_private(data_dir)
    if not wide:
        print(f"{'data directory':<24} {'ok':<5} {data_dir}: private (files 0600, folders 0700)")
        return []
    shown = [(str(path), mode) for path, mode in wide[:20]]
    more = f" (and {len(wide) - 20} more)" if len(wide) > 20 else ""
    return [
        (
            "data directory",
            f"{len(wide)} entr{'y' if len(wide) == 1 else 'ies'} under {data_dir} readable by others "
            f"than the owner; run: chmod -R go-rwx {data_dir}{more}",
        ),
        *(("  private files", f"{path} is {mode:04o}") for path, mode in shown),
    ]


def _doctor_index(app: Any, stores: list[Any], line: Callable[[str, bool, str], None]) -> None:
    """The index checks of ``docqa doctor``."""
    from acl.errors import NotFound

    settings = app.settings
    backend = settings.index.backend
    if backend != "opensearch":
        line("index backend", True, f"{backend} (under {settings.index_dir})")
        return
    config = settings.index.opensearch
    auth = "api key" if config.api_key else "username/password" if config.username else "none"
    url = config.url or ""
    tls = f", TLS verify {'on' if config.verify else 'OFF'}" if url.startswith("https:") else ""
    line("index backend", True, f"opensearch at {url} (auth: {auth}{tls}, engine {config.engine})")
    try:
        server = app.index.server()
    except DocQAError as exc:
        line("opensearch reachable", False, public_message(exc))
        return
    version = server.version_tuple()
    minimum = _OPENSEARCH_MINIMUM[config.engine]
    line(
        "opensearch reachable",
        server.distribution == "opensearch" and version >= minimum,
        f"{server.distribution} {server.version}"
        + ("" if version >= minimum else f" (engine {config.engine} needs {'.'.join(map(str, minimum))} or later)"),
    )
    line("k-NN plugin", server.knn_plugin, "installed" if server.knn_plugin else "missing: vector search cannot work")
    for store in stores:
        check = f"store {store.id}"
        try:
            facts, problems = app.index.check_store(store.id)
        except NotFound:
            line(check, False, f"no index {app.index.index_name(store.id)} (re-index the store)")
            continue
        except DocQAError as exc:
            line(check, False, public_message(exc))
            continue
        shape = f"index {facts.name}: dimension {facts.dimension}, {facts.engine}, {facts.space_type}"
        line(check, not problems, shape if not problems else f"{shape}; " + "; ".join(problems))


def cmd_serve(args: argparse.Namespace, app: Any) -> int:
    """Serve gRPC and HTTP (GraphQL, health, /metrics) until interrupted (SIGINT/SIGTERM)."""
    import signal
    import threading

    from service.graphql_app import start_http
    from service.graphql_schema import GraphQLServices
    from service.grpc_server import services_for, start_grpc
    from service.metrics import Metrics

    services = services_for(app, Metrics())
    config = app.settings.server
    grpc_server = start_grpc(services, args.host, args.grpc_port)
    try:
        http = start_http(
            GraphQLServices(app, services.authenticator, services.queries, services.metrics),
            args.host,
            args.http_port,
        )
    except BaseException:
        grpc_server.stop(0)
        raise
    host = args.host or config.host
    print(f"gRPC on {host}:{grpc_server.port}; GraphQL on http://{host}:{http.port}/graphql", flush=True)
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            if not http.thread.is_alive():
                print("error: the HTTP server stopped", file=sys.stderr)
                return 1
    finally:
        http.stop()
        grpc_server.stop(5.0)
    return 0


def cmd_token(args: argparse.Namespace, app: Any) -> int:
    """Print a bearer token signed with the configured (or generated) HS256 secret."""
    from service.auth import mint_token

    if args.group and app.settings.auth.groups_claim is None:
        print("warning: auth.groups_claim is not configured, so the server ignores --group", file=sys.stderr)
    print(mint_token(app.settings, args.user, groups=args.group or [], admin=args.admin, ttl_s=args.ttl))
    return 0


def cmd_db(args: argparse.Namespace, app: Any) -> int:
    """The settings database's schema: ``upgrade`` applies the migrations, ``current`` tells the revision."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import OperationalError

    from acl.errors import Unavailable
    from indexer.private_files import private_dir
    from service.sql_repository import make_engine

    settings = app.settings
    if settings.database.url is None:
        private_dir(settings.data_dir)
    shown = make_url(settings.database_url).render_as_string(hide_password=True)
    engine = make_engine(settings.database_url)
    try:
        return _db_action(args.action, engine, shown)
    except OperationalError as exc:
        raise Unavailable(f"settings database {shown} unavailable: {exc.orig.__class__.__name__}") from None
    finally:
        engine.dispose()


def _db_action(action: str, engine: Any, shown: str) -> int:
    from service import schema

    before, head = schema.current_revision(engine), schema.head_revision()
    if action == "upgrade":
        after = schema.upgrade(engine)
        change = "already at" if before == after else f"upgraded from {before or 'empty'} to"
        print(f"settings database {shown}: {change} {after}")
        return 0
    state = "up to date" if before == head else "out of date: run 'docqa db upgrade'"
    print(f"settings database {shown}: at {before or 'empty (no schema)'}, head {head} ({state})")
    return 0 if before == head else 1


# ---------------------------------------------------------------------------- parser
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
        "  docqa index /srv/docs --store docs --progress-every 60 2>> index.log   # under cron",
    )
    p.add_argument("path", help="the folder; a document's id is its path relative to it")
    p.add_argument("--store", required=True, help="store id (created on first use)")
    p.add_argument("--acl-manifest", metavar="FILE", help="ACL manifest (default: acl.yaml in the folder)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    p.add_argument(
        "--progress-every",
        type=float,
        default=10.0,
        metavar="S",
        help="seconds between progress lines when stderr is not a terminal (default 10)",
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
        p.set_defaults(handler=handler)

    p = _command(sub, "stores", "list stores with document and chunk counts", "  docqa stores\n  docqa stores --json")
    p.add_argument("--json", action="store_true", help="print a JSON list of every store's settings and counts")
    p.set_defaults(handler=cmd_stores)

    p = _command(
        sub,
        "settings",
        "show or change a store's settings (relevancy level, thresholds, chunks, prompt, model)",
        "  docqa settings show acme\n"
        "  docqa settings set acme --level 0.7\n"
        "  docqa settings set acme --min-threshold 0.15 --max-threshold 0.65 --max-chunks 5\n"
        "  docqa settings set acme --prompt-template 'Answer from:\\n{context}\\nQuestion: {question}'",
    )
    p.add_argument("action", choices=["show", "set"], help="show the settings, or set the options given")
    p.add_argument("store", help="store id")
    p.add_argument("--level", help="default relevancy level in [0, 1] (0 = no threshold)")
    p.add_argument("--min-threshold", metavar="X", help="cosine similarity that level 0 maps to, in [-1, 1]")
    p.add_argument("--max-threshold", metavar="X", help="cosine similarity that level 1 maps to, in [-1, 1]")
    p.add_argument("--max-chunks", type=int, metavar="N", help="chunks per answer, 1 to 100")
    p.add_argument("--prompt-template", metavar="T", help="prompt with {context} and {question}")
    p.add_argument("--llm-model-id", metavar="ID", help="the language model of this store (watsonx model id)")
    p.add_argument("--json", action="store_true", help="print the settings as one JSON object")
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
    p.add_argument("--group", action="append", metavar="G", help="group id (needs auth.groups_claim); repeatable")
    p.add_argument("--admin", action="store_true", help="give the admin role")
    p.add_argument("--ttl", type=int, metavar="S", help="lifetime in seconds (default: auth.default_ttl_s)")
    p.set_defaults(handler=cmd_token)

    p = _command(
        sub,
        "db",
        "the settings database's schema (Alembic migrations)",
        "  docqa db current\n  DOCQA_DATABASE_URL=postgresql+psycopg://docqa@db/docqa docqa db upgrade",
    )
    p.add_argument("action", choices=["upgrade", "current"], help="upgrade: apply migrations; current: show revision")
    p.set_defaults(handler=cmd_db)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (never raises, never a traceback)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    logging.captureWarnings(True)  # library warnings are log lines like any other
    if args.data_dir:
        os.environ["DOCQA_DATA_DIR"] = args.data_dir
    app = None
    try:
        from service.bootstrap import build_app
        from service.config import load_settings

        app = build_app(load_settings(args.config))
        code = int(args.handler(args, app))
        sys.stdout.flush()  # a closed pipe is met here, inside the handlers below, not at exit
        return code
    except DocQAError as exc:
        print(f"error: {public_message(exc)}", file=sys.stderr)
        return mapping_for(exc).exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`docqa stores | head -1`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as exc:  # an internal error: say so plainly, details only on request
        if args.debug:
            raise
        log.debug("internal error", exc_info=True)
        print(f"internal error ({type(exc).__name__}); re-run with --debug for details", file=sys.stderr)
        return mapping_for(exc).exit_code
    finally:
        if app is not None:
            app.close()


def entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
